#![allow(clippy::unwrap_used)]
use super::*;
use crate::test_support::{sandbox, TempDir};
use crate::{SandboxState, SnapshotArea, SnapshotError, SnapshotOrigin};
use std::os::unix::fs::PermissionsExt;

fn origin() -> SnapshotOrigin {
    SnapshotOrigin {
        sandbox_id: "sb".into(),
        backend: "native".into(),
        kind: "files".into(),
        mechanism: "files".into(),
        policy_sha256: "00".into(),
        template: "base".into(),
        template_digest: None,
        carry: serde_json::Value::Null,
    }
}

/// A committed snapshot `id` holding a file, a nested file, an empty dir and a symlink.
fn taken(area: &SnapshotArea, id: &str) -> String {
    let staging = area.stage(id).unwrap();
    let data = staging.data_dir();
    std::fs::write(data.join("memory.bin"), vec![7u8; 100_000]).unwrap();
    std::fs::create_dir_all(data.join("upper/home")).unwrap();
    std::fs::write(data.join("upper/home/notes.txt"), b"turn 1").unwrap();
    std::fs::create_dir(data.join("empty")).unwrap();
    std::os::unix::fs::symlink("home/notes.txt", data.join("upper/link")).unwrap();
    let (manifest, sha) = area.commit(staging, origin(), 1).unwrap();
    assert_eq!(manifest.bytes(), 100_006);
    sha
}

#[test]
fn a_snapshot_is_private_complete_and_verified_before_use() {
    let dir = TempDir::new();
    let area = SnapshotArea::open(&dir.path().join("snapshots")).unwrap();
    let sha = taken(&area, "s1");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(area.root()), 0o700);
    assert_eq!(mode(&area.root().join("s1")), 0o700);
    let (data, manifest) = area.verified("s1", &sha).unwrap();
    assert_eq!(
        std::fs::read(data.join("upper/home/notes.txt")).unwrap(),
        b"turn 1"
    );
    assert_eq!(manifest.entries.len(), 6);
    // No staging directory is left behind, and a second snapshot with the id is refused.
    assert_eq!(area.ids_on_disk().unwrap(), vec!["s1".to_string()]);
    assert!(matches!(area.stage("s1"), Err(SnapshotError::Exists(_))));
    assert!(matches!(area.stage("../x"), Err(SnapshotError::BadId(_))));
}

#[test]
fn a_truncated_rewritten_added_or_removed_file_or_an_edited_manifest_is_refused() {
    let dir = TempDir::new();
    let area = SnapshotArea::open(&dir.path().join("snapshots")).unwrap();
    type Damage = fn(&std::path::Path);
    let cases: [(&str, Damage, &str); 6] = [
        (
            "truncated",
            |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("data/memory.bin"))
                    .unwrap();
                f.set_len(4096).unwrap();
            },
            "truncated",
        ),
        (
            "rewritten",
            |d| {
                let mut bytes = std::fs::read(d.join("data/memory.bin")).unwrap();
                bytes[500] ^= 1;
                std::fs::write(d.join("data/memory.bin"), bytes).unwrap();
            },
            "content changed",
        ),
        (
            "added",
            |d| std::fs::write(d.join("data/upper/evil.sh"), b"x").unwrap(),
            "added",
        ),
        (
            "removed",
            |d| std::fs::remove_file(d.join("data/upper/home/notes.txt")).unwrap(),
            "missing",
        ),
        (
            "relinked",
            |d| {
                std::fs::remove_file(d.join("data/upper/link")).unwrap();
                std::os::unix::fs::symlink("/etc/shadow", d.join("data/upper/link")).unwrap();
            },
            "target",
        ),
        (
            "manifest",
            |d| {
                let text = std::fs::read_to_string(d.join("manifest.json")).unwrap();
                std::fs::write(d.join("manifest.json"), text.replace("turn", "tURN") + " ")
                    .unwrap();
            },
            "manifest",
        ),
    ];
    for (id, damage, says) in cases {
        let sha = taken(&area, id);
        damage(&area.root().join(id));
        match area.verified(id, &sha) {
            Err(SnapshotError::Tampered { why, .. }) => {
                assert!(why.contains(says), "{id}: {why}")
            }
            other => panic!("{id}: a damaged snapshot was accepted: {other:?}"),
        }
    }
    area.remove("truncated").unwrap();
    assert!(matches!(
        area.verified("truncated", "x"),
        Err(SnapshotError::Missing { .. })
    ));
}

#[test]
fn an_interrupted_snapshot_leaves_nothing_that_looks_whole() {
    let dir = TempDir::new();
    let root = dir.path().join("snapshots");
    let area = SnapshotArea::open(&root).unwrap();
    {
        let staging = area.stage("half").unwrap();
        std::fs::write(staging.data_dir().join("memory.bin"), b"partial").unwrap();
        // Dropped without a commit (the backend failed): removed.
    }
    assert!(area.ids_on_disk().unwrap().is_empty());
    // A crash mid-write leaves a staging directory: the next open removes it.
    let staging = area.stage("crash").unwrap();
    std::fs::write(staging.data_dir().join("memory.bin"), b"partial").unwrap();
    std::mem::forget(staging);
    assert_eq!(
        area.ids_on_disk().unwrap(),
        vec![".staging-crash".to_string()]
    );
    let area = SnapshotArea::open(&root).unwrap();
    assert!(area.ids_on_disk().unwrap().is_empty());
}

#[test]
fn snapshot_records_follow_their_sandbox() {
    let store = crate::Store::open_in_memory().unwrap();
    store
        .insert_sandbox(&sandbox("sb", 1, SandboxState::Running))
        .unwrap();
    let rec = SnapshotRecord {
        id: "s1".into(),
        sandbox_id: "sb".into(),
        name: Some("after-turn-1".into()),
        purpose: SnapshotPurpose::Named,
        backend: "native".into(),
        kind: "files".into(),
        mechanism: "files".into(),
        bytes: 42,
        manifest_sha256: "ab".into(),
        created_ms: 5,
    };
    store.insert_snapshot(&rec).unwrap();
    let mut pause = rec.clone();
    pause.id = "s2".into();
    pause.purpose = SnapshotPurpose::Pause;
    pause.created_ms = 6;
    store.insert_snapshot(&pause).unwrap();
    assert_eq!(store.get_snapshot("s1").unwrap(), Some(rec.clone()));
    assert_eq!(store.snapshots_of("sb").unwrap(), vec![rec, pause]);
    store.delete_snapshot("s1").unwrap();
    assert_eq!(store.all_snapshots().unwrap().len(), 1);
    // A snapshot of an unknown sandbox is refused.
    let mut orphan = store.get_snapshot("s2").unwrap().unwrap();
    orphan.id = "s3".into();
    orphan.sandbox_id = "nobody".into();
    assert!(store.insert_snapshot(&orphan).is_err());
    // The `resuming` state is stored like any other.
    store.set_state("sb", SandboxState::Resuming, None).unwrap();
    assert_eq!(
        store.get_sandbox("sb").unwrap().unwrap().state,
        SandboxState::Resuming
    );
}

#[test]
fn a_version_1_store_keeps_its_sandboxes_metadata_and_events_through_the_migration() {
    let dir = TempDir::new();
    let path = dir.path().join("store.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
        conn.execute_batch(crate::schema::MIGRATIONS[0]).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (1, 1);
             INSERT INTO sandboxes (id, template, policy, token_hash, state, created_ms, deadline_ms)
               VALUES ('old', 'base', '{}', 'h', 'paused', 1, 2);
             INSERT INTO sandbox_metadata VALUES ('old', 'user', 'ada');
             INSERT INTO events (sandbox_id, time_ms, kind, detail) VALUES ('old', 1, 'state', '{}');
             INSERT INTO events (sandbox_id, time_ms, kind, detail) VALUES ('old', 2, 'state', '{}');",
        )
        .unwrap();
    }
    let store = crate::Store::open(&path).unwrap();
    let rec = store.get_sandbox("old").unwrap().unwrap();
    assert_eq!(rec.state, SandboxState::Paused);
    assert_eq!(rec.metadata.get("user").map(String::as_str), Some("ada"));
    let events = store.events("old", None, 10).unwrap();
    assert_eq!(events.len(), 2);
    // New events continue the numbering; the cascade to children still works.
    store
        .add_event("old", "state", &serde_json::json!({}))
        .unwrap();
    let events = store.events("old", None, 10).unwrap();
    assert!(events[2].id > events[1].id);
    store
        .set_state("old", SandboxState::Resuming, None)
        .unwrap();
}
