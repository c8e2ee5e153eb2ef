#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::super::{AuditEntry, Store, StoreError, MAX_DETAIL_BYTES};

fn entry(sandbox_id: Option<&str>, kind: &str, n: i64) -> AuditEntry {
    AuditEntry {
        sandbox_id: sandbox_id.map(str::to_owned),
        kind: kind.to_owned(),
        actor: "key:default".to_owned(),
        summary: json!({"n": n}),
        time_ms: 1_000 + n,
    }
}

#[test]
fn audit_round_trips_and_pages() {
    let store = Store::open_in_memory().unwrap();
    let mut ids = Vec::new();
    for n in 0..6 {
        let sb = if n % 2 == 0 { Some("a") } else { Some("b") };
        let kind = ["exec", "file_write", "network"][usize::try_from(n).unwrap() % 3];
        ids.push(store.add_audit(&entry(sb, kind, n)).unwrap());
    }
    // An entry about no sandbox (no sandbox record is needed either way).
    ids.push(store.add_audit(&entry(None, "file_read", 6)).unwrap());
    assert!(ids.windows(2).all(|w| w[0] < w[1]));

    let all = store.audit(None, None, 100).unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(all[0].id, ids[0]);
    assert_eq!(all[0].entry, entry(Some("a"), "exec", 0));
    assert_eq!(all[6].entry, entry(None, "file_read", 6));

    let page1 = store.audit(None, None, 3).unwrap();
    let page2 = store.audit(None, Some(page1[2].id), 3).unwrap();
    let page3 = store.audit(None, Some(page2[2].id), 3).unwrap();
    let paged: Vec<i64> = page1
        .iter()
        .chain(&page2)
        .chain(&page3)
        .map(|r| r.id)
        .collect();
    assert_eq!(paged, ids);

    let a = store.audit(Some("a"), None, 100).unwrap();
    assert_eq!(
        a.iter()
            .map(|r| r.entry.summary["n"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [0, 2, 4]
    );
    let a_after = store.audit(Some("a"), Some(a[0].id), 1).unwrap();
    assert_eq!(a_after.len(), 1);
    assert_eq!(a_after[0].id, a[1].id);

    let json = serde_json::to_value(&a[0]).unwrap();
    assert_eq!(json["kind"], "exec");
    assert_eq!(json["id"], a[0].id);
}

#[test]
fn audit_bounds_are_refused() {
    let store = Store::open_in_memory().unwrap();
    let mut big = entry(Some("a"), "exec", 0);
    big.summary = json!("x".repeat(MAX_DETAIL_BYTES));
    let err = store.add_audit(&big).unwrap_err();
    assert!(matches!(err, StoreError::TooLong { .. }), "{err:?}");
    let mut nameless = entry(Some("a"), "exec", 0);
    nameless.actor.clear();
    assert!(matches!(
        store.add_audit(&nameless),
        Err(StoreError::Empty { .. })
    ));
    assert!(store.audit(None, None, 10).unwrap().is_empty());
}
