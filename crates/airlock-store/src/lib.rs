//! The server's durable record: sandboxes, their events, an audit log of every exec, file write
//! and network decision, and the API key's hash, kept in one embedded SQLite file under
//! `--data-dir`; and every snapshot of a box (a private directory per snapshot, written
//! atomically, with a manifest of every file's digest that is checked before any restore). A restart of the server loses no record: [`Store::recover`] marks the boxes that
//! died while it was down as dead, with a reason.
//!
//! This crate is only the record: it knows nothing of boxes, backends or sessions, and must not
//! depend on any other airlock crate (the jail, the proxy, the agent, the runtime). The server
//! writes into it; the session manager never sees it.

mod api_keys;
mod audit;
mod bounds;
mod clock;
mod connection;
mod error;
mod events;
mod files;
mod manifest;
mod records;
mod recovery;
mod sandboxes;
mod schema;
mod snapshot_area;
mod snapshot_error;
mod snapshots;

pub use bounds::{
    MAX_DETAIL_BYTES, MAX_METADATA_KEY_BYTES, MAX_METADATA_PAIRS, MAX_METADATA_VALUE_BYTES,
    MAX_PAGE,
};
pub use connection::Store;
pub use error::StoreError;
pub use manifest::{sha256_hex, Entry, Manifest, SnapshotOrigin};
pub use records::{
    AuditEntry, AuditRecord, EventRecord, NewSandbox, SandboxFilter, SandboxRecord, SandboxState,
};
pub use recovery::{current_boot_id, supervisor_is_alive, DEFAULT_RECOVERY_REASON};
pub use schema::SCHEMA_VERSION;
pub use snapshot_area::{SnapshotArea, Staging};
pub use snapshot_error::SnapshotError;
pub use snapshots::{SnapshotPurpose, SnapshotRecord};

#[cfg(test)]
mod test_support;
