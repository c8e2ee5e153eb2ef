use super::*;
use serde_json::json;

fn ask(v: serde_json::Value) -> Result<GrantAsk, String> {
    GrantAsk::parse(v.as_object().expect("object"))
}

#[test]
fn a_host_and_a_public_address_make_exact_grants() {
    let g = ask(json!({"host": "Svc.Test", "port": 8080, "reason": "fetch data"})).expect("ok");
    assert_eq!(g.grant, "svc.test:8080");
    assert_eq!(g.list, GrantList::AllowDomain);
    assert!(
        g.remedy().contains("--allow-domain svc.test:8080"),
        "{}",
        g.remedy()
    );
    let g = ask(json!({"host": "93.184.216.34", "port": 443, "reason": "r"})).expect("ok");
    assert_eq!(
        (g.grant.as_str(), g.list),
        ("93.184.216.34:443", GrantList::AllowIp)
    );
}

#[test]
fn wildcards_ranges_private_addresses_and_bad_fields_are_refused() {
    for (v, needle) in [
        (
            json!({"host": "*.test", "port": 1, "reason": "r"}),
            "not one host",
        ),
        (
            json!({"host": "10.0.0.0/8", "port": 1, "reason": "r"}),
            "not one host",
        ),
        (
            json!({"host": "169.254.169.254", "port": 80, "reason": "r"}),
            "not a public address",
        ),
        (
            json!({"host": "127.0.0.1", "port": 80, "reason": "r"}),
            "not a public address",
        ),
        (
            json!({"host": "::1", "port": 80, "reason": "r"}),
            "not a public address",
        ),
        (json!({"host": "a.test", "port": 0, "reason": "r"}), "port"),
        (json!({"host": "a.test", "port": 80}), "reason"),
        (json!({"port": 80, "reason": "r"}), "host"),
    ] {
        let e = ask(v.clone()).expect_err(&v.to_string());
        assert!(e.contains(needle), "{v}: {e}");
    }
}

#[test]
fn the_reason_cannot_carry_control_characters() {
    let g = ask(json!({"host": "a.test", "port": 1, "reason": "ok\u{1b}[2J\nmore"})).expect("ok");
    assert!(
        !g.reason.contains('\u{1b}') && !g.reason.contains('\n'),
        "{:?}",
        g.reason
    );
}
