#![allow(clippy::unwrap_used)]
use super::super::test_support::sandbox;
use super::super::{SandboxState, Store};
use super::{current_boot_id, supervisor_is_alive, DEFAULT_RECOVERY_REASON};
use SandboxState::*;

#[test]
fn recover_marks_only_live_records_whose_supervisor_is_gone() {
    let store = Store::open_in_memory().unwrap();
    // id, state, supervisor pid (1 = "alive" in this test's oracle)
    let cases = [
        ("queued-gone", Queued, None),
        ("starting-gone", Starting, Some(2)),
        ("running-alive", Running, Some(1)),
        ("running-gone", Running, Some(2)),
        ("paused-gone", Paused, Some(2)),
        ("paused-alive", Paused, Some(1)),
        ("killed", Running, Some(2)),
        ("failed", Starting, None),
    ];
    for (id, state, pid) in cases {
        store.insert_sandbox(&sandbox(id, 1, state)).unwrap();
        store.set_supervisor(id, pid, Some("boot")).unwrap();
    }
    store
        .set_state("killed", Killed, Some("killed by the API"))
        .unwrap();
    store
        .set_state("failed", Failed, Some("no memory"))
        .unwrap();
    let killed_before = store.get_sandbox("killed").unwrap().unwrap();
    let failed_before = store.get_sandbox("failed").unwrap().unwrap();

    let asked = std::cell::RefCell::new(Vec::new());
    let before = super::now_ms();
    let changed = store
        .recover(
            &|r| {
                asked.borrow_mut().push(r.id.clone());
                r.supervisor_pid == Some(1)
            },
            "",
        )
        .unwrap();
    let after = super::now_ms();

    assert_eq!(
        changed,
        [
            "queued-gone",
            "starting-gone",
            "running-gone",
            "paused-gone"
        ]
    );
    let mut asked = asked.into_inner();
    asked.sort();
    assert!(
        !asked.iter().any(|id| id == "killed" || id == "failed"),
        "{asked:?}"
    );
    for id in &changed {
        let rec = store.get_sandbox(id).unwrap().unwrap();
        assert_eq!(rec.state, Dead, "{id}");
        assert_eq!(rec.reason.as_deref(), Some(DEFAULT_RECOVERY_REASON));
        assert!((before..=after).contains(&rec.ended_ms.unwrap()));
    }
    assert_eq!(
        store.get_sandbox("running-alive").unwrap().unwrap().state,
        Running
    );
    assert_eq!(
        store.get_sandbox("paused-alive").unwrap().unwrap().state,
        Paused
    );
    assert_eq!(store.get_sandbox("killed").unwrap().unwrap(), killed_before);
    assert_eq!(store.get_sandbox("failed").unwrap().unwrap(), failed_before);

    // A second pass finds nothing left to change; a given reason is recorded.
    let oracle = |r: &super::SandboxRecord| r.supervisor_pid == Some(1);
    assert!(store.recover(&oracle, "host rebooted").unwrap().is_empty());
    store.insert_sandbox(&sandbox("late", 2, Running)).unwrap();
    assert_eq!(store.recover(&oracle, "host rebooted").unwrap(), ["late"]);
    let late = store.get_sandbox("late").unwrap().unwrap();
    assert_eq!(late.reason.as_deref(), Some("host rebooted"));
}

#[test]
fn supervisor_liveness_needs_a_live_pid_in_this_boot() {
    let store = Store::open_in_memory().unwrap();
    let boot = current_boot_id().unwrap();
    assert_eq!(boot.len(), 36, "{boot}");
    let me = i32::try_from(std::process::id()).unwrap();

    let next = std::cell::Cell::new(0);
    let rec = |pid: Option<i32>, boot_id: Option<&str>| {
        next.set(next.get() + 1);
        let id = format!("sb-{}", next.get());
        store.insert_sandbox(&sandbox(&id, 1, Running)).unwrap();
        store.set_supervisor(&id, pid, boot_id).unwrap();
        store.get_sandbox(&id).unwrap().unwrap()
    };
    let current = Some(boot.as_str());
    assert!(supervisor_is_alive(&rec(Some(me), current), current));
    // pid 1 is alive (and may not be ours to signal: EPERM still means alive).
    assert!(supervisor_is_alive(&rec(Some(1), current), current));
    assert!(!supervisor_is_alive(
        &rec(Some(me), Some("another-boot")),
        current
    ));
    assert!(!supervisor_is_alive(&rec(None, current), current));
    assert!(!supervisor_is_alive(&rec(Some(me), None), current));
    assert!(!supervisor_is_alive(&rec(Some(0), current), current));
    assert!(!supervisor_is_alive(&rec(Some(-1), current), current));
    assert!(!supervisor_is_alive(&rec(Some(me), current), None));

    // A child that has exited and been reaped is gone.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    child.wait().unwrap();
    assert!(!supervisor_is_alive(&rec(Some(pid), current), current));
}
