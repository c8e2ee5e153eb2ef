//! COPY steps' archives, uploaded to the URL the file-link route hands out: on this server,
//! one use per URL, within an hour, bounded in size while it streams in, kept by the SDK's
//! `filesHash` under `<data-dir>/e2b-uploads/`. An upload is `<hash>.tar` until a build has
//! checked it against its hash, then `<hash>.ok`: only a checked one is reported `present`
//! (so the SDK skips uploading it again), and one that fails the check is deleted.
//!
//! What is kept is bounded: uploads on disk plus those streaming in (each counted at its
//! declared length, or the size cap) stay within a budget ([`KEPT_FACTOR`] times the size
//! cap). An upload that would pass it first drops the least recently used uploads (a dropped
//! checked one is reported absent, so the SDK sends it again when a build needs it) and
//! partial files older than an hour; when what streams in already fills the budget, it is
//! refused until those finish.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an upload URL stays usable.
const GRANT_LIFE: Duration = Duration::from_secs(3600);
/// The most upload URLs outstanding; the oldest go first.
const MAX_GRANTS: usize = 1024;
/// The uploads kept at once, as a multiple of the largest one accepted.
pub const KEPT_FACTOR: u64 = 4;

/// Whether `hash` is a SHA-256 in hex (what the SDKs send).
pub fn valid_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Where uploads live, and the URLs handed out.
#[derive(Debug)]
pub struct Uploads {
    dir: PathBuf,
    grants: Mutex<HashMap<String, (String, Instant)>>,
    /// Bytes uploads may hold at once (on disk and streaming in).
    budget: u64,
    /// Bytes reserved by uploads streaming in now.
    streaming: Mutex<u64>,
}

/// An upload's share of the budget while it streams in; given back on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    uploads: &'a Uploads,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut streaming = self
            .uploads
            .streaming
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *streaming = streaming.saturating_sub(self.bytes);
    }
}

/// Why an upload cannot start now.
#[derive(Debug, PartialEq, Eq)]
pub struct Full {
    pub budget: u64,
    pub streaming: u64,
}

impl Uploads {
    pub fn new(dir: PathBuf, budget: u64) -> Uploads {
        Uploads {
            dir,
            grants: Mutex::new(HashMap::new()),
            budget,
            streaming: Mutex::new(0),
        }
    }

    /// Reserves `bytes` for an upload about to stream in, first dropping the least recently
    /// used uploads (and partial files over an hour old) that stand in the way.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation<'_>, Full> {
        let mut streaming = self
            .streaming
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if streaming.saturating_add(bytes) > self.budget {
            return Err(Full {
                budget: self.budget,
                streaming: *streaming,
            });
        }
        let mut kept = self.kept();
        let mut on_disk: u64 = kept.iter().map(|k| k.bytes).sum();
        // Oldest use first.
        kept.sort_by_key(|k| std::cmp::Reverse(k.used));
        while on_disk + *streaming + bytes > self.budget {
            let Some(k) = kept.pop() else { break };
            if std::fs::remove_file(&k.path).is_ok() {
                on_disk = on_disk.saturating_sub(k.bytes);
            }
        }
        *streaming += bytes;
        Ok(Reservation {
            uploads: self,
            bytes,
        })
    }

    /// The uploads on disk that count against the budget (a partial file belongs to an upload
    /// streaming in, counted by its reservation, unless it is over an hour old: then it is
    /// left over, and removed here).
    fn kept(&self) -> Vec<Kept> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let used = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.contains(".partial-") {
                if used.elapsed().is_ok_and(|age| age > GRANT_LIFE) {
                    let _ = std::fs::remove_file(e.path());
                }
                continue;
            }
            out.push(Kept {
                path: e.path(),
                bytes: meta.len(),
                used,
            });
        }
        out
    }

    /// Marks the checked upload of `hash` used now (the least recently used go first).
    pub fn touch(&self, hash: &str) {
        if let Ok(f) = std::fs::File::options()
            .write(true)
            .open(self.checked(hash))
        {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The checked upload of `hash`.
    pub fn checked(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{}.ok", hash.to_ascii_lowercase()))
    }

    /// The unchecked upload of `hash`.
    pub fn unchecked(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{}.tar", hash.to_ascii_lowercase()))
    }

    /// A new one-use token for uploading `hash`.
    pub fn grant(&self, hash: &str, token: String) {
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        grants.retain(|_, (_, at)| now.duration_since(*at) < GRANT_LIFE);
        if grants.len() >= MAX_GRANTS {
            if let Some(oldest) = grants
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
            {
                grants.remove(&oldest);
            }
        }
        grants.insert(token, (hash.to_ascii_lowercase(), now));
    }

    /// Uses up `token` if it was granted for `hash` and is still fresh.
    pub fn take(&self, hash: &str, token: &str) -> bool {
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        match grants.remove(token) {
            Some((h, at)) => h == hash.to_ascii_lowercase() && at.elapsed() < GRANT_LIFE,
            None => false,
        }
    }
}

/// An upload on disk.
struct Kept {
    path: PathBuf,
    bytes: u64,
    used: std::time::SystemTime,
}

#[cfg(test)]
#[path = "uploads_tests.rs"]
mod tests;
