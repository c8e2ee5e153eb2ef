#![allow(clippy::unwrap_used)]
use super::super::test_support::{meta, sandbox};
use super::super::{
    SandboxFilter, SandboxState, Store, StoreError, MAX_METADATA_KEY_BYTES, MAX_METADATA_PAIRS,
    MAX_METADATA_VALUE_BYTES, MAX_PAGE,
};
use SandboxState::*;

fn ids(recs: &[super::SandboxRecord]) -> Vec<&str> {
    recs.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn insert_then_get_round_trips_every_field() {
    let store = Store::open_in_memory().unwrap();
    let mut new = sandbox("sb-1", 1_000, Queued);
    new.metadata = meta(&[("user", "ada"), ("team", "ml")]);
    let inserted = store.insert_sandbox(&new).unwrap();
    let got = store.get_sandbox("sb-1").unwrap().unwrap();
    assert_eq!(got, inserted);
    assert_eq!(got.policy, new.policy);
    assert_eq!(got.metadata, new.metadata);
    assert_eq!(got.token_hash, "hash-of-sb-1");
    assert_eq!((got.created_ms, got.deadline_ms), (1_000, 61_000));
    assert_eq!((got.state, got.reason, got.ended_ms), (Queued, None, None));
    assert_eq!((got.supervisor_pid, got.boot_id), (None, None));
    assert_eq!(store.get_sandbox("nope").unwrap(), None);
}

#[test]
fn serialized_record_hides_the_token_hash() {
    let store = Store::open_in_memory().unwrap();
    let rec = store.insert_sandbox(&sandbox("sb-1", 1, Running)).unwrap();
    let json = serde_json::to_value(&rec).unwrap();
    assert_eq!(json["state"], "running");
    assert!(json.get("token_hash").is_none(), "{json}");
}

#[test]
fn duplicate_id_is_refused() {
    let store = Store::open_in_memory().unwrap();
    store.insert_sandbox(&sandbox("sb-1", 1, Queued)).unwrap();
    let err = store
        .insert_sandbox(&sandbox("sb-1", 2, Queued))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateId { ref id } if id == "sb-1"),
        "{err:?}"
    );
}

#[test]
fn list_filters_by_state_set_newest_first() {
    let store = Store::open_in_memory().unwrap();
    store.insert_sandbox(&sandbox("a", 10, Running)).unwrap();
    store.insert_sandbox(&sandbox("b", 30, Paused)).unwrap();
    store.insert_sandbox(&sandbox("c", 20, Killed)).unwrap();
    store.insert_sandbox(&sandbox("d", 40, Running)).unwrap();
    // Same creation time: the later insert counts as newer.
    store.insert_sandbox(&sandbox("e", 40, Queued)).unwrap();

    let all = store.list_sandboxes(&SandboxFilter::default()).unwrap();
    assert_eq!(ids(&all), ["e", "d", "b", "c", "a"]);

    let f = SandboxFilter {
        states: vec![Running, Paused],
        ..SandboxFilter::default()
    };
    assert_eq!(ids(&store.list_sandboxes(&f).unwrap()), ["d", "b", "a"]);

    let f = SandboxFilter {
        states: vec![Killed],
        ..SandboxFilter::default()
    };
    assert_eq!(ids(&store.list_sandboxes(&f).unwrap()), ["c"]);

    let f = SandboxFilter {
        states: vec![Dead],
        ..SandboxFilter::default()
    };
    assert!(store.list_sandboxes(&f).unwrap().is_empty());
}

#[test]
fn list_metadata_pairs_must_all_match() {
    let store = Store::open_in_memory().unwrap();
    for (id, t, pairs) in [
        ("a", 1, meta(&[("user", "ada"), ("team", "ml")])),
        ("b", 2, meta(&[("user", "ada"), ("team", "web")])),
        ("c", 3, meta(&[("user", "bob"), ("team", "ml")])),
        ("d", 4, meta(&[])),
    ] {
        let mut s = sandbox(id, t, Running);
        s.metadata = pairs;
        store.insert_sandbox(&s).unwrap();
    }
    let list = |pairs: &[(&str, &str)], states: Vec<SandboxState>| {
        let f = SandboxFilter {
            states,
            metadata: meta(pairs),
            limit: 10,
        };
        ids(&store.list_sandboxes(&f).unwrap())
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(list(&[("user", "ada")], vec![]), ["b", "a"]);
    assert_eq!(list(&[("team", "ml")], vec![]), ["c", "a"]);
    assert_eq!(list(&[("user", "ada"), ("team", "ml")], vec![]), ["a"]);
    assert!(list(&[("user", "ada"), ("team", "ops")], vec![]).is_empty());
    // A key matching another pair's value does not count.
    assert!(list(&[("ada", "user")], vec![]).is_empty());
    assert_eq!(list(&[("user", "ada")], vec![Running]), ["b", "a"]);
    assert!(list(&[("user", "ada")], vec![Paused]).is_empty());
}

#[test]
fn list_honours_the_limit_and_caps_it() {
    let store = Store::open_in_memory().unwrap();
    for i in 0..5 {
        store
            .insert_sandbox(&sandbox(&format!("s{i}"), i, Running))
            .unwrap();
    }
    let f = SandboxFilter {
        limit: 2,
        ..SandboxFilter::default()
    };
    assert_eq!(ids(&store.list_sandboxes(&f).unwrap()), ["s4", "s3"]);
    let f = SandboxFilter {
        limit: 0,
        ..SandboxFilter::default()
    };
    assert!(store.list_sandboxes(&f).unwrap().is_empty());
    let f = SandboxFilter {
        limit: u32::MAX,
        ..SandboxFilter::default()
    };
    assert_eq!(store.list_sandboxes(&f).unwrap().len(), 5);

    for i in 5..=i64::from(MAX_PAGE) {
        store
            .insert_sandbox(&sandbox(&format!("s{i}"), i, Running))
            .unwrap();
    }
    let f = SandboxFilter {
        limit: u32::MAX,
        ..SandboxFilter::default()
    };
    assert_eq!(store.list_sandboxes(&f).unwrap().len(), MAX_PAGE as usize);
}

#[test]
fn state_changes_record_reason_and_end_time() {
    let store = Store::open_in_memory().unwrap();
    store.insert_sandbox(&sandbox("sb", 1, Queued)).unwrap();
    store.set_state("sb", Starting, None).unwrap();
    store.set_state("sb", Running, None).unwrap();
    store
        .set_state("sb", Paused, Some("idle for 5 minutes"))
        .unwrap();
    let rec = store.get_sandbox("sb").unwrap().unwrap();
    assert_eq!(
        (rec.state, rec.reason.as_deref(), rec.ended_ms),
        (Paused, Some("idle for 5 minutes"), None)
    );

    store.set_state("sb", Running, None).unwrap();
    let before = super::now_ms();
    store
        .set_state("sb", Killed, Some("killed by the API"))
        .unwrap();
    let after = super::now_ms();
    let rec = store.get_sandbox("sb").unwrap().unwrap();
    assert_eq!(
        (rec.state, rec.reason.as_deref()),
        (Killed, Some("killed by the API"))
    );
    let ended = rec.ended_ms.unwrap();
    assert!(
        (before..=after).contains(&ended),
        "{before} <= {ended} <= {after}"
    );
}

#[test]
fn an_ended_sandbox_cannot_change_state() {
    let store = Store::open_in_memory().unwrap();
    for end in [Killed, Expired, Dead, Failed] {
        let id = format!("sb-{end}");
        store.insert_sandbox(&sandbox(&id, 1, Running)).unwrap();
        store.set_state(&id, end, Some("first")).unwrap();
        let ended = store.get_sandbox(&id).unwrap().unwrap();
        for next in SandboxState::ALL {
            let err = store.set_state(&id, next, Some("second")).unwrap_err();
            assert!(
                matches!(err, StoreError::AlreadyEnded { state, .. } if state == end),
                "{end} -> {next}: {err:?}"
            );
            assert!(err.to_string().contains("already ended"), "{err}");
        }
        assert_eq!(
            store.get_sandbox(&id).unwrap().unwrap(),
            ended,
            "record untouched"
        );
    }
}

#[test]
fn inserting_in_a_terminal_state_records_the_end() {
    let store = Store::open_in_memory().unwrap();
    let rec = store.insert_sandbox(&sandbox("sb", 77, Failed)).unwrap();
    assert_eq!(rec.ended_ms, Some(77));
    assert_eq!(store.get_sandbox("sb").unwrap().unwrap().ended_ms, Some(77));
}

#[test]
fn updates_of_unknown_sandboxes_are_not_found() {
    let store = Store::open_in_memory().unwrap();
    let not_found = |r: Result<(), StoreError>| matches!(r, Err(StoreError::NotFound { .. }));
    assert!(not_found(store.set_state("x", Running, None)));
    assert!(not_found(store.set_deadline("x", 5)));
    assert!(not_found(store.set_supervisor("x", Some(1), None)));
}

#[test]
fn deadline_and_supervisor_are_updated() {
    let store = Store::open_in_memory().unwrap();
    store.insert_sandbox(&sandbox("sb", 1, Running)).unwrap();
    store.set_deadline("sb", 999_999).unwrap();
    store
        .set_supervisor("sb", Some(4242), Some("boot-a"))
        .unwrap();
    let rec = store.get_sandbox("sb").unwrap().unwrap();
    assert_eq!(rec.deadline_ms, 999_999);
    assert_eq!(
        (rec.supervisor_pid, rec.boot_id.as_deref()),
        (Some(4242), Some("boot-a"))
    );
    store.set_supervisor("sb", None, None).unwrap();
    let rec = store.get_sandbox("sb").unwrap().unwrap();
    assert_eq!((rec.supervisor_pid, rec.boot_id), (None, None));
}

#[test]
fn metadata_bounds_are_refused() {
    let store = Store::open_in_memory().unwrap();
    let mut s = sandbox("sb", 1, Queued);
    s.metadata = (0..=MAX_METADATA_PAIRS)
        .map(|i| (format!("k{i}"), "v".to_owned()))
        .collect();
    let err = store.insert_sandbox(&s).unwrap_err();
    assert!(
        matches!(err, StoreError::TooManyMetadata { count: 65, max: 64 }),
        "{err:?}"
    );

    s.metadata = meta(&[(&"k".repeat(MAX_METADATA_KEY_BYTES + 1), "v")]);
    let err = store.insert_sandbox(&s).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLong {
                len,
                max: MAX_METADATA_KEY_BYTES,
                ..
            } if len == MAX_METADATA_KEY_BYTES + 1
        ),
        "{err:?}"
    );

    s.metadata = meta(&[("", "v")]);
    assert!(matches!(
        store.insert_sandbox(&s),
        Err(StoreError::Empty { .. })
    ));

    s.metadata = meta(&[("k", &"v".repeat(MAX_METADATA_VALUE_BYTES + 1))]);
    let err = store.insert_sandbox(&s).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLong {
                len,
                max: MAX_METADATA_VALUE_BYTES,
                ..
            } if len == MAX_METADATA_VALUE_BYTES + 1
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("the most allowed is {MAX_METADATA_VALUE_BYTES}")),
        "{err}"
    );

    // At the bounds is fine.
    s.metadata = (0..MAX_METADATA_PAIRS)
        .map(|i| (format!("{i:0>128}"), "v".repeat(MAX_METADATA_VALUE_BYTES)))
        .collect();
    let rec = store.insert_sandbox(&s).unwrap();
    assert_eq!(store.get_sandbox("sb").unwrap().unwrap(), rec);

    // Nothing of the refused inserts was written.
    assert_eq!(
        store
            .list_sandboxes(&SandboxFilter::default())
            .unwrap()
            .len(),
        1
    );

    // Filters are bounded too.
    let f = SandboxFilter {
        metadata: (0..=MAX_METADATA_PAIRS)
            .map(|i| (format!("k{i}"), "v".to_owned()))
            .collect(),
        ..SandboxFilter::default()
    };
    assert!(matches!(
        store.list_sandboxes(&f),
        Err(StoreError::TooManyMetadata { .. })
    ));
}

#[test]
fn empty_ids_are_refused() {
    let store = Store::open_in_memory().unwrap();
    let err = store.insert_sandbox(&sandbox("", 1, Queued)).unwrap_err();
    assert!(matches!(err, StoreError::Empty { .. }), "{err:?}");
}

#[test]
fn an_insert_inside_a_transaction_commits_or_rolls_back_with_it() {
    let store = Store::open_in_memory().unwrap();
    // Committed together with the event written after it.
    store
        .in_transaction(|s| {
            s.insert_sandbox(&sandbox("sb-1", 1_000, Starting))?;
            s.add_event("sb-1", "state", &serde_json::json!({"state": "starting"}))
        })
        .unwrap();
    assert_eq!(store.events("sb-1", None, 10).unwrap().len(), 1);
    // A later failure in the same transaction takes the insert back, metadata and all.
    let mut second = sandbox("sb-2", 2_000, Starting);
    second.metadata = meta(&[("user", "ada")]);
    let err = store
        .in_transaction(|s| {
            s.insert_sandbox(&second)?;
            s.insert_sandbox(&sandbox("sb-1", 3_000, Starting))
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateId { .. }), "{err:?}");
    assert_eq!(store.get_sandbox("sb-2").unwrap(), None);
    let filter = SandboxFilter {
        metadata: meta(&[("user", "ada")]),
        ..SandboxFilter::default()
    };
    assert!(store.list_sandboxes(&filter).unwrap().is_empty());
}

#[test]
fn progress_is_the_state_and_deadline_alone() {
    let store = Store::open_in_memory().unwrap();
    store
        .insert_sandbox(&sandbox("sb-1", 1_000, Starting))
        .unwrap();
    assert_eq!(
        store.sandbox_progress("sb-1").unwrap(),
        Some((Starting, 61_000))
    );
    store.set_state("sb-1", Running, None).unwrap();
    store.set_deadline("sb-1", 99_000).unwrap();
    assert_eq!(
        store.sandbox_progress("sb-1").unwrap(),
        Some((Running, 99_000))
    );
    assert_eq!(store.sandbox_progress("nope").unwrap(), None);
}
