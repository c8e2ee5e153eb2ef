#![allow(clippy::unwrap_used)]
use super::*;

fn spec() -> SessionSpec {
    SessionSpec::new("workspace".into(), serde_json::Value::Null)
}

fn table(max_running: usize) -> Table<&'static str> {
    Table::new(ManagerConfig {
        max_running,
        ..ManagerConfig::default()
    })
}

#[test]
fn a_slot_is_held_until_the_stopped_box_is_released() {
    let mut t = table(1);
    let Ok(Admission::Start(Job::Start((a, _, _)))) = t.admit("a".into(), spec(), 0) else {
        panic!()
    };
    assert_eq!(t.started(a, Ok("box-a"), 5), None);
    assert!(matches!(
        t.admit("b".into(), spec(), 6),
        Ok(Admission::Queued(_))
    ));

    assert_eq!(
        t.end(a, SessionState::Killed, "killed by request", 7)
            .unwrap(),
        Some("box-a")
    );
    assert!(t.next_start(8).is_none(), "the box is not stopped yet");
    t.release(a);
    let Some(Job::Start((_, id, s))) = t.next_start(9) else {
        panic!("no start")
    };
    assert_eq!((id.as_str(), s.template.as_str()), ("b", "workspace"));
    assert_eq!(t.occupied(), 1);
}

#[test]
fn a_failed_start_frees_its_slot_and_keeps_the_kill_reason_if_killed_first() {
    let mut t = table(1);
    let Ok(Admission::Start(Job::Start((a, _, _)))) = t.admit("a".into(), spec(), 0) else {
        panic!()
    };
    assert_eq!(
        t.end(a, SessionState::Killed, "killed by request", 1)
            .unwrap(),
        None
    );
    assert_eq!(t.started(a, Err("no".into()), 2), None);
    assert_eq!(t.occupied(), 0);
    let a = t.get("a").unwrap();
    assert_eq!(
        (a.state, a.reason.as_deref()),
        (SessionState::Killed, Some("killed by request"))
    );
}

#[test]
fn a_lent_handle_of_an_ended_session_comes_back_to_be_stopped() {
    let mut t = table(2);
    let Ok(Admission::Start(Job::Start((a, _, _)))) = t.admit("a".into(), spec(), 0) else {
        panic!()
    };
    t.started(a, Ok("box-a"), 0);
    let (key, h) = t.lend("a", true).ok().unwrap();
    assert!(matches!(t.lend("a", true), Err(LendRefusal::Busy)));
    assert!(t.lend_idle().is_empty());
    assert_eq!(
        t.end(key, SessionState::Expired, "timeout", 1).unwrap(),
        None
    );
    assert_eq!(t.give_back(key, h, None), Some("box-a"));
    assert_eq!(t.occupied(), 1);
    t.release(key);
    assert_eq!(t.occupied(), 0);
}

#[test]
fn durations_in_reasons_read_as_seconds() {
    assert_eq!(seconds(300_000), "300 s");
    assert_eq!(seconds(1_500), "1.5 s");
    assert_eq!(seconds(100), "0.1 s");
}

#[test]
fn an_ended_record_keeps_its_labels_compactly_and_is_still_found_by_them() {
    let mut t = table(1);
    let mut s = spec();
    s.metadata = [("team", "ml"), ("user", "ada")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let labels = s.metadata.clone();
    let Ok(Admission::Start(Job::Start((a, _, _)))) = t.admit("a".into(), s, 0) else {
        panic!()
    };
    assert_eq!(t.started(a, Ok("box-a"), 1), None);
    assert_eq!(
        t.end(a, SessionState::Killed, "killed by request", 2)
            .unwrap(),
        Some("box-a")
    );
    t.release(a);
    // Retired: the labels moved out of the spec's map into the record's compact list.
    let r = t.records.get(&a).unwrap();
    assert!(r.retired && r.spec.metadata.is_empty() && r.ended_labels.len() == 2);
    assert_eq!(t.get("a").unwrap().metadata, labels);
    assert_eq!(t.spec("a").unwrap().metadata, labels);
    let filter = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    let found: Vec<String> = t
        .list(&[], &filter("team", "ml"))
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(found, ["a"]);
    assert!(t.list(&[], &filter("team", "web")).is_empty());
    assert!(t.list(&[], &filter("nobody", "ml")).is_empty());
}
