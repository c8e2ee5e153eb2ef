//! Why a snapshot could not be written, found or trusted.

use std::path::{Path, PathBuf};

/// A snapshot operation that failed. A snapshot that fails its check is never restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot {what} {}; check the server's --data-dir (space, permissions)", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot {id} was changed on disk after it was taken ({why}); it is refused, never restored — take a new one")]
    Tampered { id: String, why: String },
    #[error("snapshot {id} is not on disk (its directory is gone); it cannot be restored")]
    Missing { id: String },
    #[error("snapshot id {0:?} is not valid: use letters, digits, '-' and '_' only")]
    BadId(String),
    #[error("{} cannot be kept in a snapshot: {why}", path.display())]
    Unsupported { path: PathBuf, why: String },
    #[error("snapshot {0} exists already")]
    Exists(String),
}

/// Turns an I/O failure on `path` into [`SnapshotError::Io`].
pub(super) fn io_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> SnapshotError + 'a {
    move |source| SnapshotError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}
