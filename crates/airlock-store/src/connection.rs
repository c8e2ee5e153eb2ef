//! Opening the store: one SQLite connection in WAL mode with a busy timeout and foreign keys on,
//! migrated to the current schema.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::error::StoreError;
use super::{files, schema};

/// How long a write waits for another writer (another connection or process) before failing
/// with [`StoreError::Busy`].
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's durable record. One connection: `Send` but not `Sync`; share it behind a mutex.
pub struct Store {
    pub(super) conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the store file at `path`: parent directories are created 0700,
    /// the file is 0600, and the schema is brought up to date. A store written by a newer airlock
    /// is refused with [`StoreError::NewerSchema`].
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let path = files::prepare(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| open_error(&path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| open_error(&path, e))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| open_error(&path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NoWal { path, mode });
        }
        // In WAL mode, NORMAL keeps every commit across a crash of the server; only a power loss
        // may roll back the last few, leaving the file consistent.
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(|e| open_error(&path, e))?;
        Store::finish(conn)
    }

    /// Opens a private store that lives in memory and vanishes when dropped.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Store::finish(Connection::open_in_memory()?)
    }

    fn finish(mut conn: Connection) -> Result<Store, StoreError> {
        conn.execute_batch("PRAGMA foreign_keys = ON;")?;
        let on: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
        if on != 1 {
            return Err(StoreError::Corrupt {
                what: "this SQLite build cannot enforce foreign keys".into(),
            });
        }
        schema::migrate(&mut conn)?;
        Ok(Store { conn })
    }

    /// Runs `f` in one transaction: every write it makes is committed together (one WAL commit
    /// instead of one per statement), or none when it fails. [`Store::insert_sandbox`] joins
    /// it; `f` must not run the recovery, which opens a transaction of its own (SQLite refuses
    /// one inside another).
    pub fn in_transaction<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        let value = f(self)?;
        tx.commit()?;
        Ok(value)
    }

    /// Changes how long writes wait for another writer (tests use a short one).
    #[cfg(test)]
    pub(super) fn set_busy_timeout(&self, timeout: Duration) -> Result<(), StoreError> {
        Ok(self.conn.busy_timeout(timeout)?)
    }
}

/// Names the file for the failures that are about it, not about a query.
fn open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    match StoreError::from(e) {
        StoreError::Corrupt { .. } => StoreError::NotAStore {
            path: path.to_path_buf(),
        },
        StoreError::ReadOnly => StoreError::ReadOnlyDir {
            path: path.parent().map_or_else(PathBuf::new, Path::to_path_buf),
        },
        other => other,
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
