//! File operations answered in one step: stat, list_dir, make_dir, rename, remove.
//! Paths must be absolute; symlinks are described, never followed, when listing or stating.

use airlock_protocol::{Entry, EntryKind, MAX_LIST_ENTRIES};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a file operation failed: an I/O error, or a protocol bound.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{0} must be an absolute path")]
    NotAbsolute(String),
    #[error("{path} holds more than {MAX_LIST_ENTRIES} entries within the requested depth; list a smaller tree")]
    TooManyEntries { path: String },
    #[error("listing {path} took longer than {} s (a box with little CPU lists slowly); list a smaller tree or a lower depth", LIST_BUDGET.as_secs())]
    TooSlow { path: String },
}

/// Longest a listing may take: the request waits for it, and a box with a small CPU quota walks
/// a deep tree for minutes.
const LIST_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

impl FileError {
    pub(crate) fn code(&self) -> airlock_protocol::ErrorCode {
        match self {
            FileError::Io { source, .. } => crate::error::code_of(source),
            FileError::NotAbsolute(_) => airlock_protocol::ErrorCode::Invalid,
            FileError::TooManyEntries { .. } | FileError::TooSlow { .. } => {
                airlock_protocol::ErrorCode::Limit
            }
        }
    }
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FileError + 'a {
    move |source| FileError::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// Checks that `path` is absolute.
pub(crate) fn absolute(path: &str) -> Result<&Path, FileError> {
    let p = Path::new(path);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(FileError::NotAbsolute(path.to_string()))
    }
}

/// An entry from metadata.
pub(crate) fn entry(path: &Path, meta: &fs::Metadata) -> Entry {
    let ft = meta.file_type();
    let kind = if ft.is_symlink() {
        EntryKind::Symlink
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    Entry {
        path: path.display().to_string(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into()),
        kind,
        size: meta.len(),
        mode: meta.mode() & 0o7777,
        mtime: meta.mtime(),
        uid: meta.uid(),
        gid: meta.gid(),
        target: if ft.is_symlink() {
            fs::read_link(path)
                .ok()
                .map(|t| t.to_string_lossy().into_owned())
        } else {
            None
        },
        // Symlinks hold no `user.` attributes on Linux; skip the syscalls.
        xattrs: if ft.is_symlink() {
            Default::default()
        } else {
            crate::xattrs::read_user(path)
        },
    }
}

pub(crate) fn stat(path: &str) -> Result<Entry, FileError> {
    let p = absolute(path)?;
    let meta = fs::symlink_metadata(p).map_err(io_err("stat", p))?;
    Ok(entry(p, &meta))
}

/// Entries under `path`, `depth` levels deep (1 = the directory's own entries), sorted by path;
/// refused past [`MAX_LIST_ENTRIES`] entries or [`LIST_BUDGET`].
pub(crate) fn list_dir(path: &str, depth: u32) -> Result<Vec<Entry>, FileError> {
    list_dir_within(path, depth, LIST_BUDGET)
}

fn list_dir_within(
    path: &str,
    depth: u32,
    budget: std::time::Duration,
) -> Result<Vec<Entry>, FileError> {
    let until = std::time::Instant::now() + budget;
    let root = absolute(path)?;
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, u32)> = vec![(root.to_path_buf(), 1)];
    while let Some((dir, level)) = stack.pop() {
        let read = match fs::read_dir(&dir) {
            Ok(r) => r,
            // Subdirectories that vanished or are unreadable are skipped; the root is not.
            Err(_) if dir != root => continue,
            Err(e) => return Err(io_err("list", &dir)(e)),
        };
        if std::time::Instant::now() >= until {
            return Err(FileError::TooSlow {
                path: path.to_string(),
            });
        }
        for item in read {
            let Ok(item) = item else { continue };
            let Ok(meta) = item.metadata() else { continue };
            if out.len() >= MAX_LIST_ENTRIES {
                return Err(FileError::TooManyEntries {
                    path: path.to_string(),
                });
            }
            let p = item.path();
            if meta.file_type().is_dir() && level < depth {
                stack.push((p.clone(), level + 1));
            }
            out.push(entry(&p, &meta));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

pub(crate) fn make_dir(path: &str, parents: bool) -> Result<(), FileError> {
    let p = absolute(path)?;
    fs::DirBuilder::new()
        .recursive(parents)
        .mode(0o755)
        .create(p)
        .map_err(io_err("mkdir", p))
}

pub(crate) fn rename(from: &str, to: &str) -> Result<(), FileError> {
    let f = absolute(from)?;
    let t = absolute(to)?;
    fs::rename(f, t).map_err(io_err("rename", f))
}

/// Sets `user.` extended attributes on `path` (which must exist).
pub(crate) fn set_xattrs(
    path: &str,
    xattrs: &std::collections::BTreeMap<String, String>,
) -> Result<(), FileError> {
    let p = absolute(path)?;
    crate::xattrs::set(p, xattrs).map_err(io_err("setxattr", p))
}

pub(crate) fn remove(path: &str, recursive: bool) -> Result<(), FileError> {
    let p = absolute(path)?;
    let meta = fs::symlink_metadata(p).map_err(io_err("remove", p))?;
    let result = if meta.file_type().is_dir() {
        if recursive {
            fs::remove_dir_all(p)
        } else {
            fs::remove_dir(p)
        }
    } else {
        fs::remove_file(p)
    };
    result.map_err(io_err("remove", p))
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
