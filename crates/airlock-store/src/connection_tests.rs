#![allow(clippy::unwrap_used)]
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::json;

use super::super::test_support::{meta, sandbox, TempDir};
use super::super::{AuditEntry, SandboxFilter, SandboxState, StoreError, SCHEMA_VERSION};
use super::Store;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn store_is_send() {
    fn send<T: Send>() {}
    send::<Store>();
}

#[test]
fn records_survive_a_reopen() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    let (event_id, audit_id) = {
        let store = Store::open(&path).unwrap();
        let mut s = sandbox("sb-1", 5, SandboxState::Running);
        s.metadata = meta(&[("user", "ada")]);
        store.insert_sandbox(&s).unwrap();
        store
            .set_supervisor("sb-1", Some(77), Some("boot-x"))
            .unwrap();
        store
            .insert_sandbox(&sandbox("sb-2", 6, SandboxState::Queued))
            .unwrap();
        store
            .set_state("sb-2", SandboxState::Killed, Some("bye"))
            .unwrap();
        store.set_api_key_hash("default", "h1").unwrap();
        let e = store
            .add_event("sb-1", "started", &json!({"pid": 77}))
            .unwrap();
        let a = store
            .add_audit(&AuditEntry {
                sandbox_id: Some("sb-1".into()),
                kind: "exec".into(),
                actor: "key:default".into(),
                summary: json!({"argv": ["ls"]}),
                time_ms: 9,
            })
            .unwrap();
        (e, a)
    };
    let store = Store::open(&path).unwrap();
    let sb1 = store.get_sandbox("sb-1").unwrap().unwrap();
    assert_eq!(sb1.metadata, meta(&[("user", "ada")]));
    assert_eq!(
        (sb1.supervisor_pid, sb1.boot_id.as_deref()),
        (Some(77), Some("boot-x"))
    );
    let sb2 = store.get_sandbox("sb-2").unwrap().unwrap();
    assert_eq!(
        (sb2.state, sb2.reason.as_deref()),
        (SandboxState::Killed, Some("bye"))
    );
    assert_eq!(
        store
            .list_sandboxes(&SandboxFilter::default())
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        store.api_key_hash("default").unwrap().as_deref(),
        Some("h1")
    );
    let events = store.events("sb-1", None, 10).unwrap();
    assert_eq!((events.len(), events[0].id), (1, event_id));
    let audit = store.audit(None, None, 10).unwrap();
    assert_eq!((audit.len(), audit[0].id), (1, audit_id));
    // Ids keep growing after a reopen.
    assert!(store.add_event("sb-1", "x", &json!(null)).unwrap() > event_id);
}

#[test]
fn directory_and_file_are_private() {
    let tmp = TempDir::new();
    let dir = tmp.path().join("data").join("airlock");
    let path = dir.join("store.db");
    let store = Store::open(&path).unwrap();
    store
        .insert_sandbox(&sandbox("sb", 1, SandboxState::Queued))
        .unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&tmp.path().join("data")), 0o700);
    assert_eq!(mode(&path), 0o600);
    // SQLite gives its WAL and shared-memory files the database file's mode.
    let wal = dir.join("store.db-wal");
    assert!(wal.exists());
    assert_eq!(mode(&wal), 0o600);
    let journal_mode: String = store
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(journal_mode, "wal");
    let fk: i64 = store
        .conn
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    drop(store);

    // An existing file readable by others is narrowed; an existing directory is left as it is.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
    Store::open(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir), 0o750);
}

#[test]
fn a_newer_schema_is_refused() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    drop(Store::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE schema_version SET version = ?1",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
    }
    let err = Store::open(&path).err().unwrap();
    assert!(
        matches!(err, StoreError::NewerSchema { found, supported } if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("written by a newer airlock"), "{msg}");
    assert!(msg.contains("upgrade airlock"), "{msg}");
}

#[test]
fn reopening_the_current_schema_migrates_nothing() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    drop(Store::open(&path).unwrap());
    let store = Store::open(&path).unwrap();
    let (rows, version): (i64, i64) = store
        .conn
        .query_row(
            "SELECT count(*), max(version) FROM schema_version",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, version), (1, SCHEMA_VERSION));
}

#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let err = Store::open(&path).err().unwrap();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    assert!(err.to_string().contains("not an airlock store"), "{err}");
}

#[test]
fn a_parent_that_is_a_file_is_a_clear_error() {
    let tmp = TempDir::new();
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"").unwrap();
    let err = Store::open(&file.join("store.db")).err().unwrap();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string().contains("cannot create the data directory"),
        "{err}"
    );
}

/// Another connection holds the write lock for `hold`, then commits.
fn hold_write_lock(path: &std::path::Path, hold: Duration) -> std::thread::JoinHandle<()> {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO api_keys VALUES ('other', 'h', 0);")
        .unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(hold);
        conn.execute_batch("COMMIT").unwrap();
    })
}

#[test]
fn a_short_competing_write_is_waited_out() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    let store = Store::open(&path).unwrap();
    let holder = hold_write_lock(&path, Duration::from_millis(300));
    let start = Instant::now();
    store
        .insert_sandbox(&sandbox("sb", 1, SandboxState::Queued))
        .unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    holder.join().unwrap();
    assert!(store.get_sandbox("sb").unwrap().is_some());
    assert_eq!(store.api_key_hash("other").unwrap().as_deref(), Some("h"));
}

#[test]
fn a_long_competing_write_is_a_busy_error() {
    let tmp = TempDir::new();
    let path = tmp.path().join("store.db");
    let store = Store::open(&path).unwrap();
    store.set_busy_timeout(Duration::from_millis(100)).unwrap();
    let holder = hold_write_lock(&path, Duration::from_millis(1500));
    let err = store
        .insert_sandbox(&sandbox("sb", 1, SandboxState::Queued))
        .unwrap_err();
    assert!(matches!(err, StoreError::Busy), "{err:?}");
    assert!(err.to_string().contains("only one airlock server"), "{err}");
    holder.join().unwrap();
    // Once the other writer is done, the same write goes through.
    store
        .insert_sandbox(&sandbox("sb", 1, SandboxState::Queued))
        .unwrap();
}

#[test]
fn in_memory_stores_are_independent() {
    let a = Store::open_in_memory().unwrap();
    let b = Store::open_in_memory().unwrap();
    a.insert_sandbox(&sandbox("sb", 1, SandboxState::Queued))
        .unwrap();
    assert!(b.get_sandbox("sb").unwrap().is_none());
}

#[test]
fn a_transaction_commits_every_write_or_none() {
    let store = Store::open_in_memory().unwrap();
    store
        .insert_sandbox(&sandbox("sb-1", 5, SandboxState::Running))
        .unwrap();
    store
        .in_transaction(|s| {
            s.set_deadline("sb-1", 99)?;
            s.set_state("sb-1", SandboxState::Paused, Some("quiet"))?;
            s.add_event("sb-1", "state", &json!({"state": "paused"}))
        })
        .unwrap();
    let rec = store.get_sandbox("sb-1").unwrap().unwrap();
    assert_eq!(
        (rec.deadline_ms, rec.state, rec.reason.as_deref()),
        (99, SandboxState::Paused, Some("quiet"))
    );
    assert_eq!(store.events("sb-1", None, 10).unwrap().len(), 1);
    // A failure halfway (an unknown sandbox's event) takes back what came before it.
    let failed = store.in_transaction(|s| {
        s.set_deadline("sb-1", 7)?;
        s.add_event("sb-unknown", "state", &json!({}))
    });
    assert!(
        matches!(failed, Err(StoreError::NotFound { .. })),
        "{failed:?}"
    );
    assert_eq!(store.get_sandbox("sb-1").unwrap().unwrap().deadline_ms, 99);
    assert_eq!(store.events("sb-1", None, 10).unwrap().len(), 1);
}
