//! The store's tables and the migrations that bring an older file up to date.
//!
//! `MIGRATIONS[n]` takes a store from schema `n` to `n + 1`. Append, never edit: a released
//! migration has already run on someone's data.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::error::StoreError;

/// The schema version this airlock writes; a store with a higher one is refused.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(super) const MIGRATIONS: [&str; 2] = [
    // 0 -> 1: sandboxes, their metadata and events, the audit log, API keys.
    "
    CREATE TABLE sandboxes (
        id             TEXT PRIMARY KEY NOT NULL,
        template       TEXT NOT NULL,
        policy         TEXT NOT NULL,              -- JSON
        token_hash     TEXT NOT NULL,
        state          TEXT NOT NULL CHECK (state IN
                         ('queued','starting','running','paused','killed','expired','dead','failed')),
        reason         TEXT,
        created_ms     INTEGER NOT NULL,
        deadline_ms    INTEGER NOT NULL,
        ended_ms       INTEGER,
        supervisor_pid INTEGER,
        boot_id        TEXT
    );
    CREATE INDEX sandboxes_by_state ON sandboxes (state);
    CREATE INDEX sandboxes_by_created ON sandboxes (created_ms);

    CREATE TABLE sandbox_metadata (
        sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX sandbox_metadata_by_pair ON sandbox_metadata (key, value);

    CREATE TABLE events (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
        time_ms    INTEGER NOT NULL,
        kind       TEXT NOT NULL,
        detail     TEXT NOT NULL                   -- JSON
    );
    CREATE INDEX events_by_sandbox ON events (sandbox_id, id);

    -- No foreign key: the audit log outlives sandbox records and also covers requests that
    -- never made one.
    CREATE TABLE audit (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        sandbox_id TEXT,
        time_ms    INTEGER NOT NULL,
        kind       TEXT NOT NULL,
        actor      TEXT NOT NULL,
        summary    TEXT NOT NULL                   -- JSON
    );
    CREATE INDEX audit_by_sandbox ON audit (sandbox_id, id);

    CREATE TABLE api_keys (
        name       TEXT PRIMARY KEY NOT NULL,
        hash       TEXT NOT NULL,
        updated_ms INTEGER NOT NULL
    );
    ",
    // 1 -> 2: the `resuming` state, and snapshots. SQLite cannot change a CHECK in place, so the
    // sandbox table and its two children are rebuilt (children first: dropping the old parent
    // must find no child to cascade into; renaming the new parent renames the children's
    // references with it).
    "
    CREATE TABLE sandboxes_new (
        id             TEXT PRIMARY KEY NOT NULL,
        template       TEXT NOT NULL,
        policy         TEXT NOT NULL,              -- JSON
        token_hash     TEXT NOT NULL,
        state          TEXT NOT NULL CHECK (state IN
                         ('queued','starting','running','paused','resuming',
                          'killed','expired','dead','failed')),
        reason         TEXT,
        created_ms     INTEGER NOT NULL,
        deadline_ms    INTEGER NOT NULL,
        ended_ms       INTEGER,
        supervisor_pid INTEGER,
        boot_id        TEXT
    );
    INSERT INTO sandboxes_new SELECT * FROM sandboxes;
    CREATE TABLE sandbox_metadata_new (
        sandbox_id TEXT NOT NULL REFERENCES sandboxes_new (id) ON DELETE CASCADE,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, key)
    ) WITHOUT ROWID;
    INSERT INTO sandbox_metadata_new SELECT * FROM sandbox_metadata;
    CREATE TABLE events_new (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes_new (id) ON DELETE CASCADE,
        time_ms    INTEGER NOT NULL,
        kind       TEXT NOT NULL,
        detail     TEXT NOT NULL                   -- JSON
    );
    INSERT INTO events_new SELECT * FROM events;
    DROP TABLE events;
    DROP TABLE sandbox_metadata;
    DROP TABLE sandboxes;
    ALTER TABLE sandboxes_new RENAME TO sandboxes;
    ALTER TABLE sandbox_metadata_new RENAME TO sandbox_metadata;
    ALTER TABLE events_new RENAME TO events;
    CREATE INDEX sandboxes_by_state ON sandboxes (state);
    CREATE INDEX sandboxes_by_created ON sandboxes (created_ms);
    CREATE INDEX sandbox_metadata_by_pair ON sandbox_metadata (key, value);
    CREATE INDEX events_by_sandbox ON events (sandbox_id, id);

    -- A snapshot's files live in <data-dir>/snapshots/<id>; this row is what makes them
    -- trusted: a restore checks the manifest there against manifest_sha256.
    CREATE TABLE snapshots (
        id              TEXT PRIMARY KEY NOT NULL,
        sandbox_id      TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
        name            TEXT,
        purpose         TEXT NOT NULL CHECK (purpose IN ('pause','named')),
        backend         TEXT NOT NULL,
        kind            TEXT NOT NULL,
        mechanism       TEXT NOT NULL,
        bytes           INTEGER NOT NULL,
        manifest_sha256 TEXT NOT NULL,
        created_ms      INTEGER NOT NULL
    );
    CREATE INDEX snapshots_by_sandbox ON snapshots (sandbox_id, created_ms);
    ",
];

/// Brings the store up to [`SCHEMA_VERSION`] in one transaction, or refuses a newer store.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // IMMEDIATE: two servers opening the same fresh file must not both run migration 0.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (
            id      INTEGER PRIMARY KEY CHECK (id = 1),
            version INTEGER NOT NULL
        );",
    )?;
    let found: i64 = tx
        .query_row("SELECT version FROM schema_version WHERE id = 1", [], |r| {
            r.get(0)
        })
        .optional()?
        .unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < 0 {
        return Err(StoreError::Corrupt {
            what: format!("schema version {found}"),
        });
    }
    let start = usize::try_from(found).unwrap_or(usize::MAX);
    for sql in MIGRATIONS.iter().skip(start) {
        tx.execute_batch(sql)?;
    }
    tx.execute(
        "INSERT INTO schema_version (id, version) VALUES (1, ?1)
         ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        [SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(())
}
