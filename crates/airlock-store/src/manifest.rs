//! A snapshot's manifest: every entry of its data tree (each file's size and SHA-256, each
//! directory, each symlink's target) and what it belongs to (sandbox, backend, policy, template).
//! A snapshot is restored only after its tree matches its manifest exactly, and the manifest the
//! digest the store's record holds.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::snapshot_error::{io_err, SnapshotError};

/// The manifest format this airlock writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// What a snapshot belongs to, as its taker says (the store does not interpret it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotOrigin {
    /// The sandbox it was taken of.
    pub sandbox_id: String,
    /// The backend that wrote it (`native`, `microvm`, ...); only that backend restores it.
    pub backend: String,
    /// What it keeps (`memory` or `files`).
    pub kind: String,
    /// How it was taken (`qemu-migration`, `files`, ...).
    pub mechanism: String,
    /// SHA-256 of the resolved policy's JSON: a restore under another policy is refused.
    pub policy_sha256: String,
    /// The template's name, and its digest when it has one.
    pub template: String,
    pub template_digest: Option<String>,
    /// What the taker needs to continue the box from the snapshot (opaque to the store; covered
    /// by the manifest's digest like everything else here).
    #[serde(default)]
    pub carry: serde_json::Value,
}

/// One entry of a snapshot's data tree, by path relative to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    File {
        path: String,
        size: u64,
        sha256: String,
        mode: u32,
    },
    Dir {
        path: String,
        mode: u32,
    },
    Symlink {
        path: String,
        target: String,
    },
}

impl Entry {
    fn path(&self) -> &str {
        match self {
            Entry::File { path, .. } | Entry::Dir { path, .. } | Entry::Symlink { path, .. } => {
                path
            }
        }
    }
}

/// A snapshot's manifest, as written beside its data tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    pub snapshot_id: String,
    pub origin: SnapshotOrigin,
    pub created_ms: i64,
    /// Every entry, sorted by path.
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// The total size of the snapshot's files, in bytes.
    pub fn bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::File { size, .. } => *size,
                _ => 0,
            })
            .sum()
    }
}

/// Lowercase hex of a SHA-256 digest of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn file_sha256(path: &Path) -> Result<(u64, String), SnapshotError> {
    let mut file = std::fs::File::open(path).map_err(io_err("read", path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io_err("read", path))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((size, hex(&hasher.finalize())))
}

/// Every entry of the tree under `root`, sorted by path. Special files (sockets, devices,
/// fifos) are refused: no backend writes them, and none may be restored.
pub fn scan(root: &Path) -> Result<Vec<Entry>, SnapshotError> {
    let mut entries = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let read = std::fs::read_dir(&dir).map_err(io_err("list", &dir))?;
        for item in read {
            let item = item.map_err(io_err("list", &dir))?;
            let rel_path = rel.join(item.file_name());
            let path = root.join(&rel_path);
            let name = rel_path
                .to_str()
                .ok_or_else(|| SnapshotError::Unsupported {
                    path: path.clone(),
                    why: "its name is not UTF-8".into(),
                })?;
            let meta = std::fs::symlink_metadata(&path).map_err(io_err("inspect", &path))?;
            let mode = meta.permissions().mode() & 0o7777;
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).map_err(io_err("read", &path))?;
                entries.push(Entry::Symlink {
                    path: name.to_string(),
                    target: target.to_string_lossy().into_owned(),
                });
            } else if kind.is_dir() {
                entries.push(Entry::Dir {
                    path: name.to_string(),
                    mode,
                });
                stack.push(rel_path);
            } else if kind.is_file() {
                let (size, sha256) = file_sha256(&path)?;
                entries.push(Entry::File {
                    path: name.to_string(),
                    size,
                    sha256,
                    mode,
                });
            } else {
                return Err(SnapshotError::Unsupported {
                    path,
                    why: "it is a socket, fifo or device; a snapshot holds files, directories \
                          and symlinks only"
                        .into(),
                });
            }
        }
    }
    entries.sort_by(|a, b| a.path().cmp(b.path()));
    Ok(entries)
}

/// Checks that the tree under `root` is exactly what `manifest` lists: no entry missing, none
/// added, every file of the recorded size and digest, every symlink pointing where it did.
pub fn verify(snapshot: &str, root: &Path, manifest: &Manifest) -> Result<(), SnapshotError> {
    let found = scan(root).map_err(|e| match e {
        SnapshotError::Unsupported { path, why } => SnapshotError::Tampered {
            id: snapshot.to_string(),
            why: format!("{} appeared: {why}", path.display()),
        },
        other => other,
    })?;
    let tampered = |why: String| SnapshotError::Tampered {
        id: snapshot.to_string(),
        why,
    };
    let mut want = manifest.entries.iter().peekable();
    let mut have = found.iter().peekable();
    loop {
        match (want.peek(), have.peek()) {
            (None, None) => return Ok(()),
            (Some(w), None) => return Err(tampered(format!("{} is missing", w.path()))),
            (None, Some(h)) => {
                return Err(tampered(format!(
                    "{} was added after it was taken",
                    h.path()
                )))
            }
            (Some(w), Some(h)) if w.path() < h.path() => {
                return Err(tampered(format!("{} is missing", w.path())))
            }
            (Some(w), Some(h)) if w.path() > h.path() => {
                return Err(tampered(format!(
                    "{} was added after it was taken",
                    h.path()
                )))
            }
            (Some(w), Some(h)) => {
                if w != h {
                    let why = match (w, h) {
                        (
                            Entry::File {
                                size: ws,
                                sha256: wd,
                                ..
                            },
                            Entry::File {
                                size: hs,
                                sha256: hd,
                                ..
                            },
                        ) if ws != hs => format!(
                            "{} is {hs} bytes, but {ws} were written (truncated or grown)",
                            w.path()
                        ),
                        (Entry::File { sha256: wd, .. }, Entry::File { sha256: hd, .. })
                            if wd != hd =>
                        {
                            format!("{}'s content changed (SHA-256 {hd}, not {wd})", w.path())
                        }
                        _ => format!("{} changed its type, mode or target", w.path()),
                    };
                    return Err(tampered(why));
                }
                want.next();
                have.next();
            }
        }
    }
}
