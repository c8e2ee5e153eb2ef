//! E2B's stored secrets (`Secret.create` and friends): a name, a write-only value, metadata and
//! a version, kept across restarts of the server in a directory of its own
//! (`<data-dir>/e2b-secrets`, mode 0700, one file of mode 0600 per secret, written whole and
//! renamed into place). Values never enter the store, a listing, an answer or an error; they
//! leave this module only as [`SecretValue`]s for the egress proxy of a box whose network
//! rules name them.

use airlock_policy::SecretValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use zeroize::Zeroizing;

/// The longest name, in bytes.
pub const MAX_NAME: usize = 256;
/// The longest value, in bytes (it is sent in an HTTP header).
pub const MAX_VALUE: usize = 16 * 1024;
/// E2B's metadata limits: entries, key bytes, value bytes, bytes in all.
pub const MAX_METADATA_ENTRIES: usize = 32;
pub const MAX_METADATA_KEY: usize = 128;
pub const MAX_METADATA_VALUE: usize = 1024;
pub const MAX_METADATA_TOTAL: usize = 8192;
/// The most secrets the server keeps.
pub const MAX_SECRETS: usize = 10_000;

/// Why a vault call was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VaultError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Exists(String),
    #[error("{0}")]
    Io(String),
}

/// What may be shown of a secret: everything but its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub id: String,
    pub name: String,
    pub version: u64,
    pub metadata: BTreeMap<String, String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

struct Entry {
    info: SecretInfo,
    value: SecretValue,
}

/// One secret's file.
#[derive(Serialize, Deserialize)]
struct OnDisk {
    id: String,
    name: String,
    version: u64,
    metadata: BTreeMap<String, String>,
    created_ms: i64,
    updated_ms: i64,
    value: String,
}

/// The stored secrets, in creation order.
pub struct Vault {
    /// `None`: kept in memory only (tests of the routes).
    dir: Option<PathBuf>,
    entries: Mutex<Vec<Entry>>,
}

impl Vault {
    /// A vault that keeps nothing on disk.
    pub fn in_memory() -> Vault {
        Vault {
            dir: None,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// Opens (or makes) the vault in `dir`. A file that cannot be read is an error naming it:
    /// a secret is never dropped silently.
    pub fn open(dir: &Path) -> Result<Vault, VaultError> {
        let io = |what: &str, e: std::io::Error| {
            VaultError::Io(format!(
                "the secrets directory {}: {what}: {e}",
                dir.display()
            ))
        };
        fs::create_dir_all(dir).map_err(|e| io("cannot create it", e))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| io("cannot make it private (mode 0700)", e))?;
        let mut entries = Vec::new();
        let mut paths = Vec::new();
        for item in fs::read_dir(dir).map_err(|e| io("cannot list it", e))? {
            let path = item.map_err(|e| io("cannot list it", e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with(".tmp-") {
                // A write that did not finish: the secret's previous file is still whole.
                let _ = fs::remove_file(&path);
            } else if name.ends_with(".json") {
                paths.push(path);
            }
        }
        for path in paths {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let text = Zeroizing::new(fs::read(&path).map_err(|e| io(name, e))?);
            let disk: OnDisk = serde_json::from_slice(&text).map_err(|e| {
                VaultError::Io(format!(
                    "the secret file {} is unreadable ({e}); move it away to start without it",
                    path.display()
                ))
            })?;
            let value = SecretValue::new(disk.value.as_bytes().to_vec());
            drop(Zeroizing::new(disk.value));
            entries.push(Entry {
                info: SecretInfo {
                    id: disk.id,
                    name: disk.name,
                    version: disk.version,
                    metadata: disk.metadata,
                    created_ms: disk.created_ms,
                    updated_ms: disk.updated_ms,
                },
                value,
            });
        }
        entries
            .sort_by(|a, b| (a.info.created_ms, &a.info.id).cmp(&(b.info.created_ms, &b.info.id)));
        if !entries.is_empty() {
            crate::held_secrets::not_dumpable();
        }
        Ok(Vault {
            dir: Some(dir.to_path_buf()),
            entries: Mutex::new(entries),
        })
    }

    /// Stores a new secret (version 1).
    pub fn create(
        &self,
        name: &str,
        value: &str,
        metadata: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<SecretInfo, VaultError> {
        check_name(name)?;
        check_value(value)?;
        check_metadata(&metadata)?;
        let mut entries = self.lock();
        if entries.iter().any(|e| e.info.name == name) {
            return Err(VaultError::Exists(format!(
                "a secret named {name:?} exists; update it (Secret.update) or delete it first"
            )));
        }
        if entries.len() >= MAX_SECRETS {
            return Err(VaultError::Invalid(format!(
                "the server keeps at most {MAX_SECRETS} secrets; delete one first"
            )));
        }
        let id = new_id()?;
        let entry = Entry {
            info: SecretInfo {
                id,
                name: name.to_string(),
                version: 1,
                metadata,
                created_ms: now_ms,
                updated_ms: now_ms,
            },
            value: SecretValue::new(value.as_bytes().to_vec()),
        };
        self.write(&entry)?;
        crate::held_secrets::not_dumpable();
        let info = entry.info.clone();
        entries.push(entry);
        Ok(info)
    }

    /// Stores `value` as the secret's next version; `metadata`, when given, replaces its
    /// metadata. `key` is the secret's id or name.
    pub fn update(
        &self,
        key: &str,
        value: &str,
        metadata: Option<BTreeMap<String, String>>,
        now_ms: i64,
    ) -> Result<SecretInfo, VaultError> {
        check_value(value)?;
        if let Some(m) = &metadata {
            check_metadata(m)?;
        }
        let mut entries = self.lock();
        let at = find(&entries, key)?;
        let old = &entries[at];
        let entry = Entry {
            info: SecretInfo {
                version: old.info.version + 1,
                metadata: metadata.unwrap_or_else(|| old.info.metadata.clone()),
                updated_ms: now_ms.max(old.info.created_ms),
                ..old.info.clone()
            },
            value: SecretValue::new(value.as_bytes().to_vec()),
        };
        self.write(&entry)?;
        let info = entry.info.clone();
        entries[at] = entry;
        Ok(info)
    }

    /// The secret `key` (id or name), without its value.
    pub fn get(&self, key: &str) -> Result<SecretInfo, VaultError> {
        let entries = self.lock();
        let at = find(&entries, key)?;
        Ok(entries[at].info.clone())
    }

    /// Every secret, oldest first, without values.
    pub fn list(&self) -> Vec<SecretInfo> {
        self.lock().iter().map(|e| e.info.clone()).collect()
    }

    /// Deletes the secret `key` (id or name). Boxes made with it keep the value they got.
    pub fn delete(&self, key: &str) -> Result<(), VaultError> {
        let mut entries = self.lock();
        let at = find(&entries, key)?;
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{}.json", entries[at].info.id));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(VaultError::Io(format!(
                        "cannot delete {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        entries.remove(at);
        Ok(())
    }

    /// The current value of the secret named `name`, for a box's proxy.
    pub fn value_of(&self, name: &str) -> Option<SecretValue> {
        self.lock()
            .iter()
            .find(|e| e.info.name == name)
            .map(|e| e.value.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `entry`'s file whole: a private temporary file, synced, renamed over the old one.
    fn write(&self, entry: &Entry) -> Result<(), VaultError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let disk = OnDisk {
            id: entry.info.id.clone(),
            name: entry.info.name.clone(),
            version: entry.info.version,
            metadata: entry.info.metadata.clone(),
            created_ms: entry.info.created_ms,
            updated_ms: entry.info.updated_ms,
            value: String::from_utf8_lossy(entry.value.expose()).into_owned(),
        };
        let text = Zeroizing::new(
            serde_json::to_vec(&disk)
                .map_err(|e| VaultError::Io(format!("the secret cannot be encoded: {e}")))?,
        );
        drop(Zeroizing::new(disk.value));
        let tmp = dir.join(format!(".tmp-{}", entry.info.id));
        let path = dir.join(format!("{}.json", entry.info.id));
        let io = |e: std::io::Error| {
            let _ = fs::remove_file(&tmp);
            VaultError::Io(format!("cannot write {}: {e}", path.display()))
        };
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        f.write_all(&text).map_err(io)?;
        f.sync_all().map_err(io)?;
        fs::rename(&tmp, &path).map_err(io)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

fn find(entries: &[Entry], key: &str) -> Result<usize, VaultError> {
    entries
        .iter()
        .position(|e| e.info.id == key)
        .or_else(|| entries.iter().position(|e| e.info.name == key))
        .ok_or_else(|| {
            VaultError::NotFound(format!(
                "secret {key:?} not found (no secret has that id or name)"
            ))
        })
}

/// A name E2B's SDKs accept (non-empty, no `{`, `}` or control characters: it goes into the
/// `${e2b.secrets.NAME}` placeholder), at most [`MAX_NAME`] bytes.
pub fn check_name(name: &str) -> Result<(), VaultError> {
    if name.is_empty()
        || name.len() > MAX_NAME
        || name.chars().any(|c| c == '{' || c == '}' || c.is_control())
    {
        return Err(VaultError::Invalid(format!(
            "secret name {name:?} is not usable: 1 to {MAX_NAME} bytes, without '{{', '}}' or control characters"
        )));
    }
    Ok(())
}

/// A value that can go into an HTTP header. The error never shows the value.
fn check_value(value: &str) -> Result<(), VaultError> {
    if value.is_empty() {
        return Err(VaultError::Invalid("the secret's value is empty".into()));
    }
    if value.len() > MAX_VALUE {
        return Err(VaultError::Invalid(format!(
            "the secret's value is {} bytes; at most {MAX_VALUE} (it is sent in an HTTP header)",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(VaultError::Invalid(
            "the secret's value holds control characters (it is sent in an HTTP header)".into(),
        ));
    }
    Ok(())
}

fn check_metadata(m: &BTreeMap<String, String>) -> Result<(), VaultError> {
    if m.len() > MAX_METADATA_ENTRIES {
        return Err(VaultError::Invalid(format!(
            "metadata has {} entries; at most {MAX_METADATA_ENTRIES}",
            m.len()
        )));
    }
    let mut total = 0;
    for (k, v) in m {
        if k.is_empty() || k.len() > MAX_METADATA_KEY {
            return Err(VaultError::Invalid(format!(
                "metadata key {k:?} must be 1 to {MAX_METADATA_KEY} bytes"
            )));
        }
        if v.len() > MAX_METADATA_VALUE {
            return Err(VaultError::Invalid(format!(
                "metadata {k:?}: the value is {} bytes; at most {MAX_METADATA_VALUE}",
                v.len()
            )));
        }
        total += k.len() + v.len();
    }
    if total > MAX_METADATA_TOTAL {
        return Err(VaultError::Invalid(format!(
            "metadata holds {total} bytes; at most {MAX_METADATA_TOTAL} in all"
        )));
    }
    Ok(())
}

/// A new secret id: a random UUID (version 4 layout).
fn new_id() -> Result<String, VaultError> {
    let mut h: Vec<u8> = crate::secrets::random_hex(16)
        .map_err(|e| VaultError::Io(format!("no random bytes for the secret's id: {e}")))?
        .into_bytes();
    h[12] = b'4';
    h[16] = b"89ab"[usize::from(h[16] % 4)];
    let h = String::from_utf8_lossy(&h);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

#[cfg(test)]
#[path = "vault_tests.rs"]
mod tests;
