//! Network decisions of proxied boxes, into the store. Each box's proxy appends its decisions to
//! `DATA_DIR/network/<sandbox id>.jsonl` as they happen (from the box's own supervisor process);
//! the server imports the new lines into the store's audit log and the sandbox's events.

use crate::observer::{lock, SharedStore};
use airlock_runtime::store::AuditEntry;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Most bytes imported from one file per pass (the rest waits for the next pass).
const MAX_PASS: u64 = 4 << 20;

/// Where a sandbox's network decisions are written.
pub fn audit_path(dir: &Path, sandbox_id: &str) -> PathBuf {
    dir.join(format!("{sandbox_id}.jsonl"))
}

/// Imports complete new lines from every audit file, remembering how far each was read.
pub struct NetworkImporter {
    dir: PathBuf,
    offsets: HashMap<PathBuf, u64>,
}

impl NetworkImporter {
    pub fn new(dir: PathBuf) -> NetworkImporter {
        NetworkImporter {
            dir,
            offsets: HashMap::new(),
        }
    }

    /// One pass over the directory; errors are skipped (the next pass retries).
    pub fn import(&mut self, store: &SharedStore) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_string)
            else {
                continue;
            };
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            let from = self.offsets.get(&path).copied().unwrap_or(0);
            if len <= from {
                continue;
            }
            let Ok(mut file) = std::fs::File::open(&path) else {
                continue;
            };
            if file.seek(SeekFrom::Start(from)).is_err() {
                continue;
            }
            let mut buf = Vec::new();
            if file
                .take((len - from).min(MAX_PASS))
                .read_to_end(&mut buf)
                .is_err()
            {
                continue;
            }
            // Only complete lines; a partial last line waits for the next pass.
            let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
                continue;
            };
            let store = lock(store);
            for line in buf[..end].split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
                    continue;
                };
                let time_ms = event
                    .get("time_ms")
                    .and_then(serde_json::Value::as_i64)
                    .unwrap_or(0);
                let _ = store.add_audit(&AuditEntry {
                    sandbox_id: Some(id.clone()),
                    kind: "network".into(),
                    actor: "proxy".into(),
                    summary: event.clone(),
                    time_ms,
                });
                let _ = store.add_event(&id, "network", &event);
            }
            self.offsets.insert(path, from + end as u64 + 1);
        }
    }
}
