#![allow(clippy::unwrap_used)]

use super::*;
use crate::service::snapshots::SnapshotService;

struct Fixture {
    observer: StoreObserver,
    store: SharedStore,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture(tag: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("airlock-observer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store: SharedStore = Arc::new(Mutex::new(Store::open(&dir.join("airlock.db")).unwrap()));
    let pending = Arc::new(Mutex::new(HashMap::new()));
    let area = airlock_store::SnapshotArea::open(&dir.join("snapshots")).unwrap();
    let observer = StoreObserver::new(
        Arc::clone(&store),
        Arc::clone(&pending),
        Arc::new(crate::e2b::E2bState::new(
            "0".repeat(64),
            crate::e2b::DefaultNetwork::None,
        )),
        Arc::new(SnapshotService::new(area, Arc::clone(&store))),
        Arc::new(crate::held_secrets::HeldSecrets::default()),
    );
    Fixture {
        observer,
        store,
        pending,
        dir,
    }
}

fn info(id: &str, state: SessionState) -> SessionInfo {
    SessionInfo {
        id: id.into(),
        template: "base".into(),
        metadata: Default::default(),
        state,
        reason: None,
        created_ms: 1_000,
        started_ms: Some(1_001),
        deadline_ms: 301_000,
        ended_ms: None,
        queue_position: None,
    }
}

fn pend(f: &Fixture, id: &str) {
    f.pending.lock().unwrap().insert(
        id.into(),
        Pending {
            token_hash: "h".into(),
            policy: serde_json::json!({}),
        },
    );
}

fn states(f: &Fixture, id: &str) -> Vec<String> {
    lock(&f.store)
        .events(id, None, 100)
        .unwrap()
        .into_iter()
        .map(|e| e.detail["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn changes_told_together_are_all_recorded_in_order_and_the_pending_entry_goes() {
    let f = fixture("batch");
    pend(&f, "sb_a");
    f.observer.sessions_changed(&[
        info("sb_a", SessionState::Starting),
        info("sb_a", SessionState::Running),
    ]);
    let record = lock(&f.store).get_sandbox("sb_a").unwrap().unwrap();
    assert_eq!(record.state, SandboxState::Running);
    assert_eq!(states(&f, "sb_a"), ["starting", "running"]);
    assert!(f.pending.lock().unwrap().is_empty());
}

/// Makes the store refuse every event of sandbox `id` (a trigger, through a second connection).
fn refuse_events_of(f: &Fixture, id: &str) {
    let conn = rusqlite::Connection::open(f.dir.join("airlock.db")).unwrap();
    conn.execute_batch(&format!(
        "CREATE TRIGGER refuse_{id} BEFORE INSERT ON events WHEN NEW.sandbox_id = '{id}' \
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"
    ))
    .unwrap();
}

#[test]
fn a_change_that_cannot_be_recorded_loses_no_other() {
    let f = fixture("fallback");
    refuse_events_of(&f, "sb_bad");
    pend(&f, "sb_good");
    pend(&f, "sb_bad");
    // Together they fail (sb_bad's event is refused), so each is tried alone.
    f.observer.sessions_changed(&[
        info("sb_good", SessionState::Starting),
        info("sb_bad", SessionState::Starting),
        info("sb_good", SessionState::Running),
    ]);
    let record = lock(&f.store).get_sandbox("sb_good").unwrap().unwrap();
    assert_eq!(record.state, SandboxState::Running);
    assert_eq!(states(&f, "sb_good"), ["starting", "running"]);
    assert!(lock(&f.store).get_sandbox("sb_bad").unwrap().is_none());
    let pending = f.pending.lock().unwrap();
    assert!(!pending.contains_key("sb_good"), "recorded: forgotten");
    assert!(
        pending.contains_key("sb_bad"),
        "not recorded: kept for a later change to record it"
    );
}
