#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::super::test_support::sandbox;
use super::super::{SandboxState, Store, StoreError, MAX_DETAIL_BYTES};

fn store_with(ids: &[&str]) -> Store {
    let store = Store::open_in_memory().unwrap();
    for id in ids {
        store
            .insert_sandbox(&sandbox(id, 1, SandboxState::Running))
            .unwrap();
    }
    store
}

#[test]
fn events_page_in_order_per_sandbox() {
    let store = store_with(&["a", "b"]);
    let before = super::now_ms();
    let mut a_ids = Vec::new();
    for i in 0..5 {
        a_ids.push(store.add_event("a", "exec", &json!({"n": i})).unwrap());
        store.add_event("b", "other", &json!({"n": i})).unwrap();
    }
    assert!(a_ids.windows(2).all(|w| w[0] < w[1]), "{a_ids:?}");

    let page1 = store.events("a", None, 2).unwrap();
    assert_eq!(page1.iter().map(|e| e.id).collect::<Vec<_>>(), a_ids[..2]);
    assert_eq!(page1[0].detail, json!({"n": 0}));
    assert_eq!(
        (page1[0].kind.as_str(), page1[0].sandbox_id.as_str()),
        ("exec", "a")
    );
    assert!(page1[0].time_ms >= before);

    let page2 = store.events("a", Some(page1[1].id), 2).unwrap();
    assert_eq!(page2.iter().map(|e| e.id).collect::<Vec<_>>(), a_ids[2..4]);
    let page3 = store.events("a", Some(page2[1].id), 2).unwrap();
    assert_eq!(page3.iter().map(|e| e.id).collect::<Vec<_>>(), a_ids[4..]);
    assert!(store.events("a", Some(a_ids[4]), 2).unwrap().is_empty());

    assert!(store
        .events("b", None, 100)
        .unwrap()
        .iter()
        .all(|e| e.kind == "other"));
    assert!(store.events("nobody", None, 100).unwrap().is_empty());
}

#[test]
fn events_need_a_known_sandbox() {
    let store = store_with(&[]);
    let err = store.add_event("ghost", "exec", &json!({})).unwrap_err();
    assert!(
        matches!(err, StoreError::NotFound { ref id } if id == "ghost"),
        "{err:?}"
    );
}

#[test]
fn event_details_over_64_kib_are_refused() {
    let store = store_with(&["a"]);
    // The encoded string adds its two quotes.
    let fits = json!("x".repeat(MAX_DETAIL_BYTES - 2));
    store.add_event("a", "big", &fits).unwrap();
    let too_big = json!("x".repeat(MAX_DETAIL_BYTES - 1));
    let err = store.add_event("a", "big", &too_big).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLong {
                max: MAX_DETAIL_BYTES,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(store.events("a", None, 10).unwrap().len(), 1);
    let err = store.add_event("a", "", &json!({})).unwrap_err();
    assert!(matches!(err, StoreError::Empty { .. }), "{err:?}");
}
