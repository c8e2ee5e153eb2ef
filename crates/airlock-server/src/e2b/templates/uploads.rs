//! COPY steps' archives, uploaded to the URL the file-link route hands out: on this server,
//! one use per URL, within an hour, bounded in size while it streams in, kept by the SDK's
//! `filesHash` under `<data-dir>/e2b-uploads/`. An upload is `<hash>.tar` until a build has
//! checked it against its hash, then `<hash>.ok`: only a checked one is reported `present`
//! (so the SDK skips uploading it again), and one that fails the check is deleted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an upload URL stays usable.
const GRANT_LIFE: Duration = Duration::from_secs(3600);
/// The most upload URLs outstanding; the oldest go first.
const MAX_GRANTS: usize = 1024;

/// Whether `hash` is a SHA-256 in hex (what the SDKs send).
pub fn valid_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Where uploads live, and the URLs handed out.
#[derive(Debug)]
pub struct Uploads {
    dir: PathBuf,
    grants: Mutex<HashMap<String, (String, Instant)>>,
}

impl Uploads {
    pub fn new(dir: PathBuf) -> Uploads {
        Uploads {
            dir,
            grants: Mutex::new(HashMap::new()),
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
