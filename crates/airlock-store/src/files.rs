//! The store's place on disk: a private directory (0700 when we create it) and a private file
//! (0600), since the store holds token and API key hashes.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::StoreError;

/// Mode of a data directory we create.
pub(super) const DIR_MODE: u32 = 0o700;
/// Mode of the store file.
pub(super) const FILE_MODE: u32 = 0o600;

/// Creates `path`'s parent directories (0700) and the file itself (0600) if missing, narrows an
/// existing file's mode to 0600, and returns the path made absolute (so SQLite never reads it as
/// a URI).
pub(super) fn prepare(path: &Path) -> Result<PathBuf, StoreError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Err(source) = DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(&parent)
    {
        return Err(dir_error(&parent, source));
    }
    let dir = parent
        .canonicalize()
        .map_err(|source| dir_error(&parent, source))?;
    let Some(name) = path.file_name() else {
        return Err(StoreError::OpenFile {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        });
    };
    let file_path = dir.join(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(&file_path)
        .map_err(|source| file_error(&dir, &file_path, source))?;
    let meta = file
        .metadata()
        .map_err(|source| file_error(&dir, &file_path, source))?;
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(&file_path, fs::Permissions::from_mode(FILE_MODE))
            .map_err(|source| file_error(&dir, &file_path, source))?;
    }
    Ok(file_path)
}

fn is_read_only(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}

fn dir_error(dir: &Path, source: io::Error) -> StoreError {
    if is_read_only(&source) {
        StoreError::ReadOnlyDir {
            path: dir.to_path_buf(),
        }
    } else {
        StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        }
    }
}

fn file_error(dir: &Path, file: &Path, source: io::Error) -> StoreError {
    if is_read_only(&source) {
        StoreError::ReadOnlyDir {
            path: dir.to_path_buf(),
        }
    } else {
        StoreError::OpenFile {
            path: file.to_path_buf(),
            source,
        }
    }
}
