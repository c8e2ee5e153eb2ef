//! Snapshot records: which snapshots a sandbox has, and the digest of each one's manifest (what
//! makes its files on disk trusted). The files themselves live in the [`SnapshotArea`].
//!
//! [`SnapshotArea`]: super::SnapshotArea

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::error::StoreError;
use super::Store;

/// Why a snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotPurpose {
    /// A pause saved the box's state here; its resume restores it (and then deletes it).
    Pause,
    /// Taken on request (`POST …/snapshots`), kept until the sandbox ends; forks start from it.
    Named,
}

impl SnapshotPurpose {
    fn as_str(self) -> &'static str {
        match self {
            SnapshotPurpose::Pause => "pause",
            SnapshotPurpose::Named => "named",
        }
    }

    fn from_name(name: &str) -> Option<SnapshotPurpose> {
        match name {
            "pause" => Some(SnapshotPurpose::Pause),
            "named" => Some(SnapshotPurpose::Named),
            _ => None,
        }
    }
}

/// A snapshot as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotRecord {
    pub id: String,
    pub sandbox_id: String,
    pub name: Option<String>,
    pub purpose: SnapshotPurpose,
    /// The backend that wrote it, and only one that restores it.
    pub backend: String,
    /// `memory` or `files`.
    pub kind: String,
    pub mechanism: String,
    /// The total size of its files.
    pub bytes: u64,
    #[serde(skip_serializing)]
    pub manifest_sha256: String,
    pub created_ms: i64,
}

const COLUMNS: &str =
    "id, sandbox_id, name, purpose, backend, kind, mechanism, bytes, manifest_sha256, created_ms";

fn read(r: &Row<'_>) -> rusqlite::Result<(SnapshotRecord, String)> {
    let purpose: String = r.get(3)?;
    let bytes: i64 = r.get(7)?;
    Ok((
        SnapshotRecord {
            id: r.get(0)?,
            sandbox_id: r.get(1)?,
            name: r.get(2)?,
            purpose: SnapshotPurpose::Named,
            backend: r.get(4)?,
            kind: r.get(5)?,
            mechanism: r.get(6)?,
            bytes: u64::try_from(bytes).unwrap_or(0),
            manifest_sha256: r.get(8)?,
            created_ms: r.get(9)?,
        },
        purpose,
    ))
}

fn decode((mut rec, purpose): (SnapshotRecord, String)) -> Result<SnapshotRecord, StoreError> {
    rec.purpose = SnapshotPurpose::from_name(&purpose).ok_or_else(|| StoreError::Corrupt {
        what: format!("snapshot {} has the unknown purpose {purpose:?}", rec.id),
    })?;
    Ok(rec)
}

impl Store {
    /// Records a snapshot of a recorded sandbox.
    pub fn insert_snapshot(&self, rec: &SnapshotRecord) -> Result<(), StoreError> {
        self.conn.execute(
            &format!("INSERT INTO snapshots ({COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"),
            params![
                rec.id,
                rec.sandbox_id,
                rec.name,
                rec.purpose.as_str(),
                rec.backend,
                rec.kind,
                rec.mechanism,
                i64::try_from(rec.bytes).unwrap_or(i64::MAX),
                rec.manifest_sha256,
                rec.created_ms,
            ],
        )?;
        Ok(())
    }

    /// The snapshot `id`, if recorded.
    pub fn get_snapshot(&self, id: &str) -> Result<Option<SnapshotRecord>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM snapshots WHERE id = ?1"),
                [id],
                read,
            )
            .optional()?
            .map(decode)
            .transpose()
    }

    /// The snapshots of sandbox `sandbox_id`, oldest first.
    pub fn snapshots_of(&self, sandbox_id: &str) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM snapshots WHERE sandbox_id = ?1 ORDER BY created_ms, rowid"
            ))?
            .query_map([sandbox_id], read)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(decode).collect()
    }

    /// Every snapshot record, oldest first (to find files no record claims).
    pub fn all_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        let rows = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM snapshots ORDER BY created_ms, rowid"
            ))?
            .query_map([], read)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(decode).collect()
    }

    /// Forgets snapshot `id` (its files are the caller's to delete).
    pub fn delete_snapshot(&self, id: &str) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM snapshots WHERE id = ?1", [id])?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
