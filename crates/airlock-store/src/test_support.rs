//! Helpers for the store's tests: a temporary directory removed on drop, and sample records.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{NewSandbox, SandboxState};

/// A fresh directory under the system temp dir, removed with everything in it on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "airlock-store-test-{}-{n}-{}",
            std::process::id(),
            super::clock::now_ms()
        ));
        std::fs::create_dir(&path).unwrap();
        TempDir(path)
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A sandbox record with id `id`, created at `created_ms`, in `state`.
pub(super) fn sandbox(id: &str, created_ms: i64, state: SandboxState) -> NewSandbox {
    NewSandbox {
        id: id.to_owned(),
        template: "base".to_owned(),
        policy: serde_json::json!({"network": {"mode": "none"}, "limits": {"memory_mib": 512}}),
        metadata: BTreeMap::new(),
        token_hash: format!("hash-of-{id}"),
        created_ms,
        deadline_ms: created_ms + 60_000,
        state,
    }
}

/// `pairs` as a metadata map.
pub(super) fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
