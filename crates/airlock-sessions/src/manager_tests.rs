#![allow(clippy::unwrap_used)]
use super::*;
use crate::{NoopObserver, OnTimeout, Paused};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc;

// ---- fakes ----

/// A clock the test moves by hand.
#[derive(Default)]
struct ManualClock(AtomicI64);

impl ManualClock {
    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the fake factory saw and what it is told to do.
#[derive(Default)]
struct FakeState {
    starts: AtomicUsize,
    stops: AtomicUsize,
    /// Boxes started and not yet stopped, and the most there ever were at once.
    live: AtomicUsize,
    max_live: AtomicUsize,
    /// The cap `live` must never pass (0: no check).
    cap: AtomicUsize,
    /// Starts of these ids fail with the message.
    fail: Mutex<HashMap<String, String>>,
    /// Starts of these ids block until the test sends (or drops the sender).
    gates: Mutex<HashMap<String, mpsc::Receiver<()>>>,
    /// These boxes report themselves dead.
    dead: Mutex<HashSet<String>>,
    stopped: Mutex<Vec<String>>,
    started: Mutex<Vec<String>>,
    pauses: AtomicUsize,
    resumes: AtomicUsize,
    frozen: AtomicUsize,
}

#[derive(Debug)]
struct FakeBox {
    id: String,
    uses: u32,
    /// Paused in place: not counted in `live` (paused boxes hold no slot).
    frozen: bool,
}

struct FakeFactory(Arc<FakeState>);

impl BoxFactory for FakeFactory {
    type Handle = FakeBox;

    fn start(&self, id: &str, _spec: &SessionSpec) -> Result<FakeBox, String> {
        let gate = self.0.gates.lock().unwrap().remove(id);
        if let Some(gate) = gate {
            let _ = gate.recv();
        }
        if let Some(message) = self.0.fail.lock().unwrap().get(id) {
            return Err(message.clone());
        }
        self.0.starts.fetch_add(1, Ordering::SeqCst);
        let live = self.0.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.max_live.fetch_max(live, Ordering::SeqCst);
        let cap = self.0.cap.load(Ordering::SeqCst);
        assert!(
            cap == 0 || live <= cap,
            "{live} boxes alive at once, more than the cap of {cap}"
        );
        self.0.started.lock().unwrap().push(id.to_string());
        Ok(FakeBox {
            id: id.to_string(),
            uses: 0,
            frozen: false,
        })
    }

    fn stop(&self, handle: FakeBox) {
        self.0.stops.fetch_add(1, Ordering::SeqCst);
        if handle.frozen {
            self.0.frozen.fetch_sub(1, Ordering::SeqCst);
        } else {
            self.0.live.fetch_sub(1, Ordering::SeqCst);
        }
        self.0.stopped.lock().unwrap().push(handle.id);
    }

    fn alive(&self, handle: &mut FakeBox) -> bool {
        !self.0.dead.lock().unwrap().contains(&handle.id)
    }

    /// A memory pause keeps the box resident; a files pause ends it (its state "saved").
    fn pause(
        &self,
        id: &str,
        _spec: &SessionSpec,
        handle: FakeBox,
        memory: bool,
    ) -> Result<Paused<FakeBox>, (FakeBox, String)> {
        if self
            .0
            .fail
            .lock()
            .unwrap()
            .contains_key(&format!("pause:{id}"))
        {
            return Err((handle, "the box refused".into()));
        }
        self.0.pauses.fetch_add(1, Ordering::SeqCst);
        if memory {
            let mut handle = handle;
            handle.frozen = true;
            self.0.live.fetch_sub(1, Ordering::SeqCst);
            self.0.frozen.fetch_add(1, Ordering::SeqCst);
            Ok(Paused::Resident(handle))
        } else {
            self.stop(handle);
            Ok(Paused::Saved)
        }
    }

    fn resume(
        &self,
        id: &str,
        spec: &SessionSpec,
        resident: Option<FakeBox>,
    ) -> Result<FakeBox, (Option<FakeBox>, String)> {
        if let Some(message) = self.0.fail.lock().unwrap().get(&format!("resume:{id}")) {
            return Err((resident, message.clone()));
        }
        self.0.resumes.fetch_add(1, Ordering::SeqCst);
        match resident {
            Some(mut h) => {
                h.frozen = false;
                self.0.frozen.fetch_sub(1, Ordering::SeqCst);
                let live = self.0.live.fetch_add(1, Ordering::SeqCst) + 1;
                let cap = self.0.cap.load(Ordering::SeqCst);
                assert!(
                    cap == 0 || live <= cap,
                    "{live} boxes run, over the cap of {cap}"
                );
                Ok(h)
            }
            None => self.start(id, spec).map_err(|e| (None, e)),
        }
    }
}

/// Records every change it is told about.
#[derive(Default)]
struct Recorder(Mutex<Vec<(String, SessionState)>>);

impl SessionObserver for Recorder {
    fn session_changed(&self, info: &SessionInfo) {
        self.0.lock().unwrap().push((info.id.clone(), info.state));
    }
}

impl Recorder {
    fn states_of(&self, id: &str) -> Vec<SessionState> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(i, _)| i == id)
            .map(|(_, s)| *s)
            .collect()
    }
}

struct Rig {
    mgr: Arc<SessionManager<FakeFactory>>,
    fake: Arc<FakeState>,
    clock: Arc<ManualClock>,
    seen: Arc<Recorder>,
}

fn config(max_running: usize) -> ManagerConfig {
    ManagerConfig {
        max_running,
        default_timeout_ms: 300_000,
        max_timeout_ms: 3_600_000,
        queue_timeout_ms: 60_000,
        max_queued: 100,
        keep_ended: 10_000,
        idle_pause_ms: None,
    }
}

fn rig_with(config: ManagerConfig) -> Rig {
    let fake = Arc::new(FakeState::default());
    fake.cap.store(config.max_running, Ordering::SeqCst);
    let clock = Arc::new(ManualClock::default());
    let seen = Arc::new(Recorder::default());
    let mgr = SessionManager::new(
        FakeFactory(fake.clone()),
        config,
        clock.clone(),
        seen.clone(),
    )
    .unwrap();
    Rig {
        mgr: Arc::new(mgr),
        fake,
        clock,
        seen,
    }
}

fn rig(max_running: usize) -> Rig {
    rig_with(config(max_running))
}

fn spec() -> SessionSpec {
    SessionSpec::new("base".into(), serde_json::Value::Null)
}

fn labelled(pairs: &[(&str, &str)]) -> SessionSpec {
    let mut s = spec();
    s.metadata = pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    s
}

fn state(r: &Rig, id: &str) -> SessionState {
    r.mgr.get(id).unwrap().state
}

/// Polls `cond` for up to 5 s.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < give_up, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---- queueing ----

#[test]
fn sessions_beyond_the_cap_queue_in_order_with_visible_positions() {
    let r = rig(2);
    for id in ["a", "b", "c", "d", "e"] {
        r.mgr.create(id.into(), spec()).unwrap();
    }
    assert_eq!(state(&r, "a"), SessionState::Running);
    assert_eq!(state(&r, "b"), SessionState::Running);
    for (id, pos) in [("c", 1), ("d", 2), ("e", 3)] {
        let info = r.mgr.get(id).unwrap();
        assert_eq!(info.state, SessionState::Queued);
        assert_eq!(info.queue_position, Some(pos), "{id}");
        assert_eq!(
            info.deadline_ms, 60_000,
            "a queued session's deadline is its queue deadline"
        );
        assert_eq!(info.started_ms, None);
    }
    assert_eq!(r.mgr.get("a").unwrap().queue_position, None);
    assert_eq!(r.fake.starts.load(Ordering::SeqCst), 2);

    // A kill frees a slot: the head of the queue starts, the others move up.
    let killed = r.mgr.kill("a").unwrap();
    assert_eq!(killed.state, SessionState::Killed);
    assert_eq!(killed.reason.as_deref(), Some("killed by request"));
    assert_eq!(r.fake.stopped.lock().unwrap().as_slice(), ["a"]);
    assert_eq!(state(&r, "c"), SessionState::Running);
    assert_eq!(r.mgr.get("d").unwrap().queue_position, Some(1));
    assert_eq!(r.mgr.get("e").unwrap().queue_position, Some(2));

    r.mgr.kill("b").unwrap();
    assert_eq!(state(&r, "d"), SessionState::Running);
    assert_eq!(
        r.fake.started.lock().unwrap().as_slice(),
        ["a", "b", "c", "d"]
    );
    assert_eq!(r.fake.max_live.load(Ordering::SeqCst), 2);
}

#[test]
fn a_queued_session_fails_at_its_queue_deadline() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.clock.advance(10_000);
    r.mgr.create("b".into(), spec()).unwrap();
    assert_eq!(r.mgr.get("b").unwrap().deadline_ms, 70_000);

    r.clock.advance(59_999);
    r.mgr.tick();
    assert_eq!(state(&r, "b"), SessionState::Queued);

    r.clock.advance(1);
    r.mgr.tick();
    let b = r.mgr.get("b").unwrap();
    assert_eq!(b.state, SessionState::Failed);
    let reason = b.reason.unwrap();
    assert!(reason.contains("waited 60 s in the queue"), "{reason}");
    assert_eq!(b.ended_ms, Some(70_000));
    assert_eq!(b.queue_position, None);
    assert_eq!(
        state(&r, "a"),
        SessionState::Running,
        "the running box is not affected"
    );
    assert_eq!(
        r.fake.starts.load(Ordering::SeqCst),
        1,
        "a session that failed in the queue never starts"
    );
}

#[test]
fn a_full_queue_refuses_new_sessions() {
    let mut c = config(1);
    c.max_queued = 1;
    let r = rig_with(c);
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    let err = r.mgr.create("c".into(), spec()).unwrap_err();
    assert!(
        matches!(
            err,
            ManagerError::QueueFull {
                max_running: 1,
                max_queued: 1
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("retry later"), "{err}");
    assert!(r.mgr.get("c").is_none());
}

#[test]
fn a_queued_session_can_be_killed() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    r.mgr.create("c".into(), spec()).unwrap();
    let b = r.mgr.kill("b").unwrap();
    assert_eq!(b.state, SessionState::Killed);
    assert_eq!(b.reason.as_deref(), Some("removed from the queue"));
    assert_eq!(r.mgr.get("c").unwrap().queue_position, Some(1));
    r.mgr.kill("a").unwrap();
    assert_eq!(state(&r, "c"), SessionState::Running);
    assert_eq!(
        state(&r, "b"),
        SessionState::Killed,
        "a removed session never starts"
    );
    assert_eq!(r.fake.started.lock().unwrap().as_slice(), ["a", "c"]);
    assert!(matches!(
        r.mgr.kill("b"),
        Err(ManagerError::NotRunning {
            state: SessionState::Killed,
            ..
        })
    ));
    assert!(matches!(r.mgr.kill("zz"), Err(ManagerError::NotFound(_))));
}

// ---- timeouts ----

#[test]
fn boxes_expire_after_300_s_by_default_and_are_stopped_once() {
    let r = rig(2);
    let info = r.mgr.create("a".into(), spec()).unwrap();
    assert_eq!(info.state, SessionState::Running);
    assert_eq!(info.deadline_ms, 300_000);
    assert_eq!(info.started_ms, Some(0));

    r.clock.advance(299_999);
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Running);

    r.clock.advance(1);
    r.mgr.tick();
    r.mgr.tick();
    let a = r.mgr.get("a").unwrap();
    assert_eq!(a.state, SessionState::Expired);
    assert_eq!(a.reason.as_deref(), Some("timeout of 300 s reached"));
    assert_eq!(a.ended_ms, Some(300_000));
    assert_eq!(r.fake.stops.load(Ordering::SeqCst), 1);
    assert!(matches!(
        r.mgr.with_handle("a", |_| ()),
        Err(ManagerError::NotRunning {
            state: SessionState::Expired,
            ..
        })
    ));
}

#[test]
fn set_timeout_extends_a_box_within_the_maximum() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.clock.advance(200_000);
    let info = r.mgr.set_timeout("a", 600_000).unwrap();
    assert_eq!(info.deadline_ms, 800_000);

    r.clock.advance(500_000); // past the original 300 s
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Running);

    let err = r.mgr.set_timeout("a", 3_600_001).unwrap_err();
    assert!(
        matches!(
            err,
            ManagerError::InvalidTimeout {
                requested_ms: 3_600_001,
                max_ms: 3_600_000
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        r.mgr.set_timeout("a", 0),
        Err(ManagerError::InvalidTimeout { .. })
    ));
    assert_eq!(
        r.mgr.get("a").unwrap().deadline_ms,
        800_000,
        "a refused timeout changes nothing"
    );

    r.clock.advance(100_000);
    r.mgr.tick();
    let a = r.mgr.get("a").unwrap();
    assert_eq!(a.state, SessionState::Expired);
    assert_eq!(a.reason.as_deref(), Some("timeout of 600 s reached"));
    assert!(matches!(
        r.mgr.set_timeout("a", 1000),
        Err(ManagerError::NotRunning { .. })
    ));
}

#[test]
fn a_spec_timeout_is_checked_and_applies_from_the_start_of_a_queued_box() {
    let r = rig(1);
    let mut long = spec();
    long.timeout_ms = Some(3_600_001);
    assert!(matches!(
        r.mgr.create("x".into(), long),
        Err(ManagerError::InvalidTimeout { .. })
    ));

    r.mgr.create("a".into(), spec()).unwrap();
    let mut short = spec();
    short.timeout_ms = Some(1_500);
    r.mgr.create("b".into(), short).unwrap();
    r.clock.advance(10_000);
    r.mgr.kill("a").unwrap();
    let b = r.mgr.get("b").unwrap();
    assert_eq!(
        (b.state, b.started_ms, b.deadline_ms),
        (SessionState::Running, Some(10_000), 11_500)
    );
    r.clock.advance(1_500);
    r.mgr.tick();
    assert_eq!(
        r.mgr.get("b").unwrap().reason.as_deref(),
        Some("timeout of 1.5 s reached")
    );
}

// ---- failures ----

#[test]
fn a_start_failure_fails_the_session_with_the_factorys_message_and_frees_the_slot() {
    let r = rig(1);
    r.fake
        .fail
        .lock()
        .unwrap()
        .insert("a".into(), "the template `nope` does not exist".into());
    let a = r.mgr.create("a".into(), spec()).unwrap();
    assert_eq!(a.state, SessionState::Failed);
    assert_eq!(
        a.reason.as_deref(),
        Some("the template `nope` does not exist")
    );
    assert!(a.ended_ms.is_some());
    assert_eq!(
        r.mgr.create("b".into(), spec()).unwrap().state,
        SessionState::Running,
        "the slot is free again"
    );
    assert_eq!(
        r.fake.stops.load(Ordering::SeqCst),
        0,
        "a box that never started is not stopped"
    );
}

#[test]
fn a_box_that_died_on_its_own_is_dead_on_the_next_tick() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    r.fake.dead.lock().unwrap().insert("a".into());
    assert_eq!(state(&r, "a"), SessionState::Running);
    r.mgr.tick();
    let a = r.mgr.get("a").unwrap();
    assert_eq!(a.state, SessionState::Dead);
    assert_eq!(a.reason.as_deref(), Some("the box ended on its own"));
    assert_eq!(
        r.fake.stopped.lock().unwrap().as_slice(),
        ["a"],
        "a dead box is still cleaned up"
    );
    assert_eq!(
        state(&r, "b"),
        SessionState::Running,
        "its slot went to the queue"
    );
}

// ---- listing ----

#[test]
fn list_filters_by_state_and_all_metadata_pairs() {
    let r = rig(2);
    r.mgr
        .create("a".into(), labelled(&[("user", "ann"), ("env", "dev")]))
        .unwrap();
    r.mgr
        .create("b".into(), labelled(&[("user", "bob"), ("env", "dev")]))
        .unwrap();
    r.mgr
        .create("c".into(), labelled(&[("user", "ann"), ("env", "prod")]))
        .unwrap();
    r.mgr
        .create("d".into(), labelled(&[("user", "ann")]))
        .unwrap();
    r.mgr.kill("b").unwrap();
    let ids = |v: Vec<SessionInfo>| v.into_iter().map(|i| i.id).collect::<Vec<_>>();
    let meta = |pairs: &[(&str, &str)]| labelled(pairs).metadata;

    assert_eq!(
        ids(r.mgr.list(&[], &BTreeMap::new())),
        ["a", "b", "c", "d"],
        "creation order"
    );
    assert_eq!(
        ids(r.mgr.list(&[], &meta(&[("user", "ann")]))),
        ["a", "c", "d"]
    );
    assert_eq!(
        ids(r.mgr.list(&[], &meta(&[("user", "ann"), ("env", "dev")]))),
        ["a"]
    );
    assert_eq!(
        ids(r.mgr.list(&[], &meta(&[("user", "ann"), ("env", "qa")]))),
        Vec::<String>::new()
    );
    assert_eq!(
        ids(r.mgr.list(&[SessionState::Running], &BTreeMap::new())),
        ["a", "c"]
    );
    assert_eq!(
        ids(r.mgr.list(
            &[SessionState::Queued, SessionState::Killed],
            &BTreeMap::new()
        )),
        ["b", "d"]
    );
    assert_eq!(
        ids(r
            .mgr
            .list(&[SessionState::Running], &meta(&[("env", "prod")]))),
        ["c"]
    );
    let d = r
        .mgr
        .list(&[SessionState::Queued], &BTreeMap::new())
        .remove(0);
    assert_eq!(d.queue_position, Some(1));
    assert_eq!(d.template, "base");
}

#[test]
fn ids_are_unique_and_infos_serialize_in_snake_case() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    assert!(matches!(
        r.mgr.create("a".into(), spec()),
        Err(ManagerError::AlreadyExists(_))
    ));
    let json = serde_json::to_value(r.mgr.get("a").unwrap()).unwrap();
    assert_eq!(json["state"], "running");
    assert_eq!(json["deadline_ms"], 300_000);
}

#[test]
fn the_observer_hears_every_change_in_order() {
    let r = rig(1);
    r.fake.fail.lock().unwrap().insert("c".into(), "no".into());
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    r.mgr.create("c".into(), spec()).unwrap();
    r.mgr.set_timeout("a", 1000).unwrap();
    r.mgr.kill("a").unwrap();
    r.mgr.kill("b").unwrap();
    use SessionState::*;
    assert_eq!(r.seen.states_of("a"), [Starting, Running, Running, Killed]);
    assert_eq!(r.seen.states_of("b"), [Queued, Starting, Running, Killed]);
    assert_eq!(r.seen.states_of("c"), [Queued, Starting, Failed]);
}

#[test]
fn ended_sessions_beyond_the_memory_limit_are_forgotten_oldest_first() {
    let mut c = config(5);
    c.keep_ended = 2;
    let r = rig_with(c);
    for id in ["a", "b", "c"] {
        r.mgr.create(id.into(), spec()).unwrap();
        r.mgr.kill(id).unwrap();
    }
    r.mgr.create("d".into(), spec()).unwrap();
    assert!(r.mgr.get("a").is_none());
    let ids: Vec<_> = r
        .mgr
        .list(&[], &BTreeMap::new())
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids, ["b", "c", "d"]);
}

#[test]
fn an_ended_record_keeps_what_its_view_shows_and_drops_the_boxs_payload() {
    let r = rig(2);
    let mut s = labelled(&[("team", "a")]);
    s.payload = serde_json::json!({"policy": "x".repeat(4096)});
    r.mgr.create("a".into(), s).unwrap();
    assert!(
        !r.mgr.spec("a").unwrap().payload.is_null(),
        "a live box keeps it"
    );
    r.mgr.kill("a").unwrap();
    let ended = r.mgr.spec("a").unwrap();
    assert!(ended.payload.is_null(), "{:?}", ended.payload);
    let info = r.mgr.get("a").unwrap();
    assert_eq!(info.state, SessionState::Killed);
    assert_eq!(info.metadata["team"], "a");
    assert_eq!(info.template, "base");
}

#[test]
fn a_configuration_that_cannot_run_boxes_is_refused() {
    let fake = Arc::new(FakeState::default());
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::default());
    let err = SessionManager::new(FakeFactory(fake), config(0), clock, Arc::new(NoopObserver))
        .err()
        .unwrap();
    assert!(err.to_string().contains("at least 1"), "{err}");
}

// ---- concurrency ----

#[test]
fn concurrent_creates_never_exceed_the_cap_and_all_run_eventually() {
    let r = rig(3);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let mgr = r.mgr.clone();
            std::thread::spawn(move || mgr.create(format!("s{i}"), spec()).unwrap())
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let running = r.mgr.list(&[SessionState::Running], &BTreeMap::new());
    assert_eq!(running.len(), 3);
    assert_eq!(
        r.mgr.list(&[SessionState::Queued], &BTreeMap::new()).len(),
        5
    );

    // Kill running sessions from several threads until every session has had its turn.
    let killers: Vec<_> = (0..4)
        .map(|_| {
            let mgr = r.mgr.clone();
            std::thread::spawn(move || loop {
                let live = mgr.list(
                    &[
                        SessionState::Queued,
                        SessionState::Starting,
                        SessionState::Running,
                    ],
                    &BTreeMap::new(),
                );
                if live.is_empty() {
                    return;
                }
                for s in live.iter().filter(|s| s.state == SessionState::Running) {
                    let _ = mgr.kill(&s.id);
                }
                std::thread::yield_now();
            })
        })
        .collect();
    for k in killers {
        k.join().unwrap();
    }
    assert_eq!(r.fake.starts.load(Ordering::SeqCst), 8);
    assert_eq!(r.fake.stops.load(Ordering::SeqCst), 8);
    assert_eq!(r.fake.max_live.load(Ordering::SeqCst), 3);
    assert_eq!(
        r.mgr.list(&[SessionState::Killed], &BTreeMap::new()).len(),
        8
    );
}

#[test]
fn a_slow_start_does_not_block_other_sessions() {
    let r = rig(3);
    let (open, gate) = mpsc::channel();
    r.fake.gates.lock().unwrap().insert("slow".into(), gate);
    r.mgr.create("other".into(), spec()).unwrap();
    let mgr = r.mgr.clone();
    let creator = std::thread::spawn(move || mgr.create("slow".into(), spec()).unwrap());
    eventually("slow is starting", || {
        r.mgr
            .get("slow")
            .is_some_and(|i| i.state == SessionState::Starting)
    });

    assert_eq!(
        r.mgr
            .list(&[SessionState::Starting], &BTreeMap::new())
            .len(),
        1
    );
    r.mgr.create("third".into(), spec()).unwrap();
    r.mgr.kill("other").unwrap();
    r.mgr.tick();

    open.send(()).unwrap();
    assert_eq!(creator.join().unwrap().state, SessionState::Running);
}

#[test]
fn a_session_killed_while_starting_is_stopped_when_its_start_returns() {
    let r = rig(1);
    let (open, gate) = mpsc::channel();
    r.fake.gates.lock().unwrap().insert("a".into(), gate);
    let mgr = r.mgr.clone();
    let creator = std::thread::spawn(move || mgr.create("a".into(), spec()).unwrap());
    eventually("a is starting", || r.mgr.get("a").is_some());
    r.mgr.create("b".into(), spec()).unwrap();
    assert_eq!(r.mgr.kill("a").unwrap().state, SessionState::Killed);
    assert_eq!(
        state(&r, "b"),
        SessionState::Queued,
        "a's slot is held until its box is stopped"
    );

    open.send(()).unwrap();
    assert_eq!(creator.join().unwrap().state, SessionState::Killed);
    assert_eq!(r.fake.stops.load(Ordering::SeqCst), 1);
    assert_eq!(state(&r, "b"), SessionState::Running);
}

#[test]
fn with_handle_does_not_block_other_sessions_and_defers_a_kill() {
    let r = rig(3);
    r.mgr.create("busy".into(), spec()).unwrap();
    r.mgr.create("other".into(), spec()).unwrap();
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let mgr = r.mgr.clone();
    let user = std::thread::spawn(move || {
        mgr.with_handle("busy", |h| {
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            h.uses += 1;
            h.uses
        })
    });
    entered.recv().unwrap();

    // Other sessions go on while the slow operation runs.
    assert_eq!(r.mgr.kill("other").unwrap().state, SessionState::Killed);
    assert_eq!(
        r.mgr.create("new".into(), spec()).unwrap().state,
        SessionState::Running
    );
    assert_eq!(r.mgr.with_handle("new", |h| h.id.clone()).unwrap(), "new");
    r.mgr.tick();
    assert_eq!(r.mgr.list(&[], &BTreeMap::new()).len(), 3);

    // Killing the busy session ends it at once; its box stops when the operation returns.
    assert_eq!(r.mgr.kill("busy").unwrap().state, SessionState::Killed);
    assert!(!r.fake.stopped.lock().unwrap().contains(&"busy".to_string()));
    release.send(()).unwrap();
    assert_eq!(user.join().unwrap().unwrap(), 1);
    assert!(r.fake.stopped.lock().unwrap().contains(&"busy".to_string()));
    assert_eq!(r.fake.stops.load(Ordering::SeqCst), 2);
}

#[test]
fn with_handle_calls_on_one_session_take_turns_and_keep_the_handle() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mgr = r.mgr.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    mgr.with_handle("a", |h| h.uses += 1).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(r.mgr.with_handle("a", |h| h.uses).unwrap(), 100);

    // A panicking operation hands the handle back.
    let mgr = r.mgr.clone();
    assert!(
        std::thread::spawn(move || mgr.with_handle("a", |_| panic!("boom")))
            .join()
            .is_err()
    );
    assert_eq!(r.mgr.with_handle("a", |h| h.uses).unwrap(), 100);
    assert!(matches!(
        r.mgr.with_handle("zz", |_| ()),
        Err(ManagerError::NotFound(_))
    ));
}

#[test]
fn wait_started_wakes_when_the_session_starts() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    let still = r.mgr.wait_started("b", Duration::from_millis(20)).unwrap();
    assert_eq!(
        still.state,
        SessionState::Queued,
        "a timed-out wait returns the current record"
    );

    let mgr = r.mgr.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        (
            mgr.wait_started("b", Duration::from_secs(30)).unwrap(),
            t.elapsed(),
        )
    });
    std::thread::sleep(Duration::from_millis(50));
    r.mgr.kill("a").unwrap();
    let (info, waited) = waiter.join().unwrap();
    assert_eq!(info.state, SessionState::Running);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert!(matches!(
        r.mgr.wait_started("zz", Duration::ZERO),
        Err(ManagerError::NotFound(_))
    ));
}

#[test]
fn shutdown_stops_every_box_and_refuses_new_sessions() {
    let r = rig(2);
    for id in ["a", "b", "c"] {
        r.mgr.create(id.into(), spec()).unwrap();
    }
    let (entered_tx, entered) = mpsc::channel();
    let mgr = r.mgr.clone();
    let user = std::thread::spawn(move || {
        mgr.with_handle("a", |_| {
            entered_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        })
    });
    entered.recv().unwrap();
    r.mgr.shutdown();
    assert_eq!(
        r.fake.stops.load(Ordering::SeqCst),
        2,
        "shutdown waits for the box in use"
    );
    assert_eq!(r.fake.live.load(Ordering::SeqCst), 0);
    user.join().unwrap().unwrap();
    for id in ["a", "b", "c"] {
        let info = r.mgr.get(id).unwrap();
        assert_eq!(info.state, SessionState::Killed, "{id}");
        assert_eq!(info.reason.as_deref(), Some("the server shut down"));
    }
    assert_eq!(
        r.fake.starts.load(Ordering::SeqCst),
        2,
        "the queued session never started"
    );
    assert!(matches!(
        r.mgr.create("d".into(), spec()),
        Err(ManagerError::ShuttingDown)
    ));
}

// ---- pause, resume, idle ----

#[test]
fn a_paused_box_gives_its_slot_back_and_a_resume_queues_for_one() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    let info = r.mgr.pause("a", true).unwrap();
    assert_eq!(info.state, SessionState::Paused);
    // The slot is free: b starts at once although a's box is still resident.
    assert_eq!(
        r.mgr.create("b".into(), spec()).unwrap().state,
        SessionState::Running
    );
    assert!(matches!(
        r.mgr.pause("a", true),
        Err(ManagerError::AlreadyPaused(_))
    ));
    // a's resume waits in the queue until b ends.
    let mgr = r.mgr.clone();
    let resumer = std::thread::spawn(move || mgr.resume("a"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.mgr.get("a").unwrap().queue_position != Some(1) {
        assert!(Instant::now() < deadline, "the resume never queued");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(state(&r, "a"), SessionState::Resuming);
    r.mgr.kill("b").unwrap();
    let info = resumer.join().unwrap().unwrap();
    assert_eq!(info.state, SessionState::Running);
    assert_eq!(r.fake.resumes.load(Ordering::SeqCst), 1);
    assert_eq!(
        r.seen.states_of("a"),
        vec![
            SessionState::Starting,
            SessionState::Running,
            SessionState::Paused,
            // Queued for a slot, then holding one while its box resumes.
            SessionState::Resuming,
            SessionState::Resuming,
            SessionState::Running
        ]
    );
    r.mgr.with_handle("a", |h| h.uses += 1).unwrap();
}

#[test]
fn a_request_on_a_paused_box_resumes_it_only_when_its_spec_says_so() {
    let r = rig(2);
    r.mgr.create("auto".into(), spec()).unwrap();
    let mut manual = spec();
    manual.auto_resume = false;
    r.mgr.create("manual".into(), manual).unwrap();
    r.mgr.pause("auto", false).unwrap();
    r.mgr.pause("manual", true).unwrap();
    // A files pause ended the box: the resume starts a new one from what was saved.
    assert_eq!(r.fake.live.load(Ordering::SeqCst), 0);
    assert_eq!(r.fake.frozen.load(Ordering::SeqCst), 1);
    r.mgr.with_handle("auto", |h| h.uses += 1).unwrap();
    assert_eq!(state(&r, "auto"), SessionState::Running);
    assert!(matches!(
        r.mgr.with_handle("manual", |_| ()),
        Err(ManagerError::PausedNoAutoResume(_))
    ));
    assert_eq!(state(&r, "manual"), SessionState::Paused);
}

#[test]
fn a_refused_pause_keeps_the_box_running_and_a_failed_resume_keeps_it_paused() {
    let r = rig(1);
    r.mgr.create("a".into(), spec()).unwrap();
    r.fake
        .fail
        .lock()
        .unwrap()
        .insert("pause:a".into(), String::new());
    assert!(matches!(
        r.mgr.pause("a", true),
        Err(ManagerError::PauseFailed { .. })
    ));
    assert_eq!(state(&r, "a"), SessionState::Running);
    r.fake.fail.lock().unwrap().clear();
    r.mgr.pause("a", true).unwrap();
    r.fake
        .fail
        .lock()
        .unwrap()
        .insert("resume:a".into(), "the snapshot is damaged".into());
    let err = r.mgr.resume("a").unwrap_err();
    assert!(err.to_string().contains("the snapshot is damaged"), "{err}");
    let info = r.mgr.get("a").unwrap();
    assert_eq!(info.state, SessionState::Paused);
    assert!(info.reason.unwrap().contains("damaged"));
    // Its slot was given back: another box can start.
    assert_eq!(
        r.mgr.create("b".into(), spec()).unwrap().state,
        SessionState::Running
    );
    // Killing the paused box stops its resident handle.
    r.mgr.kill("a").unwrap();
    assert_eq!(r.fake.frozen.load(Ordering::SeqCst), 0);
    assert_eq!(r.fake.live.load(Ordering::SeqCst), 1);
}

#[test]
fn an_idle_box_is_paused_but_not_while_work_runs_in_it() {
    let mut cfg = config(2);
    cfg.idle_pause_ms = Some(1_000);
    let r = rig_with(cfg);
    r.mgr.create("a".into(), spec()).unwrap();
    let mut never = spec();
    never.idle_pause_ms = Some(0);
    r.mgr.create("never".into(), never).unwrap();
    r.mgr.begin_work("a");
    r.clock.advance(5_000);
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Running, "a command runs");
    r.mgr.end_work("a");
    r.clock.advance(999);
    // A look (a metrics sampler) is not activity.
    r.mgr.inspect("a", |h| h.uses).unwrap();
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Running);
    r.clock.advance(1);
    r.mgr.tick();
    let info = r.mgr.get("a").unwrap();
    assert_eq!(info.state, SessionState::Paused);
    assert_eq!(info.reason.as_deref(), Some("idle for 1 s"));
    // Nor does a look resume it.
    assert!(matches!(
        r.mgr.inspect("a", |_| ()),
        Err(ManagerError::NotRunning {
            state: SessionState::Paused,
            ..
        })
    ));
    assert_eq!(state(&r, "a"), SessionState::Paused);
    assert_eq!(state(&r, "never"), SessionState::Running);
}

#[test]
fn a_timeout_pauses_a_box_whose_spec_says_so_and_a_paused_box_never_expires() {
    let r = rig(2);
    let mut s = spec();
    s.on_timeout = OnTimeout::Pause;
    s.timeout_ms = Some(10_000);
    r.mgr.create("a".into(), s).unwrap();
    r.clock.advance(10_000);
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Paused);
    r.clock.advance(3_600_000);
    r.mgr.tick();
    assert_eq!(state(&r, "a"), SessionState::Paused);
    let info = r.mgr.resume("a").unwrap();
    assert_eq!(
        info.deadline_ms,
        r.clock.now_ms() + 10_000,
        "a full life again"
    );
}

#[test]
fn shutdown_leaves_paused_sessions_paused_and_adopted_ones_resume() {
    let r = rig(2);
    r.mgr.create("a".into(), spec()).unwrap();
    r.mgr.create("b".into(), spec()).unwrap();
    r.mgr.pause("a", true).unwrap();
    r.mgr.shutdown();
    assert_eq!(state(&r, "a"), SessionState::Paused);
    assert_eq!(state(&r, "b"), SessionState::Killed);
    assert_eq!(r.fake.live.load(Ordering::SeqCst), 0);
    assert_eq!(
        r.fake.frozen.load(Ordering::SeqCst),
        0,
        "the frozen box was stopped"
    );

    let r = rig(1);
    r.mgr.adopt_paused("a".into(), spec(), 5).unwrap();
    assert_eq!(state(&r, "a"), SessionState::Paused);
    assert!(matches!(
        r.mgr.adopt_paused("a".into(), spec(), 5),
        Err(ManagerError::AlreadyExists(_))
    ));
    assert_eq!(r.mgr.resume("a").unwrap().state, SessionState::Running);
    assert_eq!(
        r.fake.starts.load(Ordering::SeqCst),
        1,
        "started from what was saved"
    );
}
