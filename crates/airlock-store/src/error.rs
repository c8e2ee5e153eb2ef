//! What can go wrong with the store, in words that say what to do about it.

use std::path::PathBuf;

use super::records::SandboxState;

/// A store operation that failed. Messages say what failed and how to fix it; the cause, if any,
/// is the error's `source()`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory or store file cannot be written (read-only filesystem or mode).
    #[error("the data directory {} is on a read-only filesystem or is not writable; pass a writable --data-dir", path.display())]
    ReadOnlyDir { path: PathBuf },
    /// The data directory could not be created or resolved.
    #[error("cannot create the data directory {}; check that its parent exists and is a writable directory", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The store file could not be created or opened.
    #[error("cannot create or open the store file {}; check that it is a regular file this user can write", path.display())]
    OpenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but is not an SQLite database.
    #[error("{} is not an airlock store (not an SQLite database); move it away or pass another --data-dir", path.display())]
    NotAStore { path: PathBuf },
    /// The filesystem cannot hold a write-ahead log.
    #[error("the data directory {} does not support SQLite's write-ahead log (journal mode stayed {mode:?}); put --data-dir on a local filesystem", path.display())]
    NoWal { path: PathBuf, mode: String },
    /// The file was migrated by a newer airlock; this one will not touch it.
    #[error("the store was written by a newer airlock (schema {found}; this airlock knows up to {supported}); upgrade airlock")]
    NewerSchema { found: i64, supported: i64 },
    /// A write failed because the store became read-only.
    #[error("the store cannot be written: its file or directory became read-only; make --data-dir writable again")]
    ReadOnly,
    /// Another writer held the lock for longer than the busy timeout.
    #[error("the store stayed locked by another writer for longer than the busy timeout; check that only one airlock server uses this --data-dir")]
    Busy,
    /// The filesystem is full.
    #[error("the filesystem holding the store is full; free space in --data-dir")]
    DiskFull,
    /// The file, or a record in it, cannot be read back.
    #[error("the store file is damaged ({what}); restore it from a backup or move it away to start afresh")]
    Corrupt { what: String },
    /// Any other SQLite failure.
    #[error("the store failed a query")]
    Sqlite {
        #[source]
        source: rusqlite::Error,
    },
    /// No sandbox has the given id.
    #[error("no sandbox with id {id:?}")]
    NotFound { id: String },
    /// A sandbox with the same id is already recorded.
    #[error("a sandbox with id {id:?} already exists; pick a new id")]
    DuplicateId { id: String },
    /// The sandbox is in a terminal state, which it never leaves.
    #[error("sandbox {id:?} has already ended ({state}); an ended sandbox cannot change state")]
    AlreadyEnded { id: String, state: SandboxState },
    /// An input is over its bound.
    #[error("{what} is {len} bytes; the most allowed is {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// An input that must be non-empty is empty.
    #[error("{what} is empty; give a non-empty value")]
    Empty { what: &'static str },
    /// More metadata pairs than allowed.
    #[error("{count} metadata pairs given; the most allowed is {max}")]
    TooManyMetadata { count: usize, max: usize },
    /// A JSON value could not be encoded.
    #[error("{what} cannot be encoded as JSON")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl From<rusqlite::Error> for StoreError {
    /// Classifies SQLite's failures into the few a caller can act on.
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        match e.sqlite_error_code() {
            Some(C::DatabaseBusy | C::DatabaseLocked) => StoreError::Busy,
            Some(C::ReadOnly) => StoreError::ReadOnly,
            Some(C::DiskFull) => StoreError::DiskFull,
            Some(C::DatabaseCorrupt | C::NotADatabase) => StoreError::Corrupt {
                what: "SQLite reports a malformed file".into(),
            },
            _ => StoreError::Sqlite { source: e },
        }
    }
}
