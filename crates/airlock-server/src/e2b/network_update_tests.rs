#![allow(clippy::unwrap_used)]

use super::*;

fn current() -> Egress {
    Egress {
        allow_domain: vec!["old.example".into()],
        max_connections: 7,
        byte_budget: Some(99),
        public_internet: true,
        ..Egress::default()
    }
}

fn update(json: &str) -> NetworkUpdate {
    serde_json::from_str(json).unwrap()
}

#[test]
fn an_update_replaces_the_rules_and_keeps_the_caps() {
    let e = updated_egress(
        &current(),
        &update(r#"{"allowOut": ["api.example"], "denyOut": ["0.0.0.0/0"]}"#),
    )
    .unwrap();
    assert_eq!(e.allow_domain, vec!["api.example".to_string()]);
    assert!(
        !e.public_internet,
        "denyOut 0.0.0.0/0: only what allowOut lists"
    );
    assert_eq!((e.max_connections, e.byte_budget), (7, Some(99)));
    let open = updated_egress(&current(), &update(r#"{"denyOut": ["bad.example"]}"#)).unwrap();
    assert!(open.public_internet && open.allow_domain.is_empty());
    assert_eq!(open.deny_domain, vec!["bad.example".to_string()]);
}

#[test]
fn closing_everything_keeps_the_proxy_allowing_nothing() {
    let e = updated_egress(&current(), &update(r#"{"allowInternetAccess": false}"#)).unwrap();
    assert!(e.allow_domain.is_empty() && e.allow_ip.is_empty() && !e.public_internet);
}

#[test]
fn deny_out_of_an_address_becomes_deny_ip() {
    let e = updated_egress(
        &current(),
        &update(r#"{"denyOut": ["10.0.0.1", "bad.example"]}"#),
    )
    .unwrap();
    assert_eq!(e.deny_ip, vec!["10.0.0.1"]);
    assert_eq!(e.deny_domain, vec!["bad.example"]);
}

#[test]
fn what_airlock_cannot_enforce_is_refused_by_name() {
    for (body, name) in [
        (r#"{"dnsServers": ["1.1.1.1"]}"#, "dnsServers"),
        (r#"{"rules": {"a.test": []}}"#, "rules"),
        (r#"{"egressProxy": {}}"#, "egressProxy"),
    ] {
        let e = updated_egress(&current(), &update(body)).unwrap_err();
        assert!(e.to_string().contains(name), "{body}: {e}");
    }
}
