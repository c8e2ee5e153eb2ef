#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn hosts_under_the_domain_name_a_port_and_a_sandbox() {
    let d = check_domain("LocalHost").unwrap();
    assert_eq!(d, "localhost");
    let want = PortHost {
        port: 8000,
        sandbox: "abc123".into(),
    };
    assert_eq!(parse_host("8000-abc123.localhost", &d), Some(want.clone()));
    // A domain without a port matches whatever port the client connected to.
    assert_eq!(
        parse_host("8000-ABC123.localhost:7777", &d),
        Some(want.clone())
    );
    let with_port = check_domain("localhost:7777").unwrap();
    assert_eq!(
        parse_host("8000-abc123.localhost:7777", &with_port),
        Some(want)
    );
    assert_eq!(parse_host("8000-abc123.localhost:7778", &with_port), None);
    assert_eq!(parse_host("8000-abc123.localhost", &with_port), None);
}

#[test]
fn other_hosts_are_not_sandbox_ports() {
    let d = check_domain("sandbox.example.com").unwrap();
    for host in [
        "127.0.0.1:7777",
        "localhost",
        "sandbox.example.com",
        "8000-abc.example.com",
        "8000-abc.evil-sandbox.example.com.attacker",
        "x8000-abc.sandbox.example.com",
        "0-abc.sandbox.example.com",
        "65536-abc.sandbox.example.com",
        "8000-.sandbox.example.com",
        "8000-a.b.sandbox.example.com",
        "8000-ab-c.sandbox.example.com",
        "8000-abcsandbox.example.com",
        "-8000-abc.sandbox.example.com",
    ] {
        assert_eq!(parse_host(host, &d), None, "{host}");
    }
}

#[test]
fn a_bad_domain_is_refused_with_what_to_give() {
    for bad in [
        "",
        "a b",
        "*.localhost",
        "http://x",
        "localhost:0",
        "localhost:x",
        "-a.b",
    ] {
        let err = check_domain(bad).unwrap_err();
        assert!(
            err.contains("domain") || err.contains("port"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn public_traffic_is_e2b_default_and_a_recorded_no_needs_the_token() {
    let public = rule_of(None).unwrap();
    assert!(public.public);
    assert!(public.admits(None, Some("t")).is_ok());
    let opts = NetworkOptions {
        allow_public_traffic: Some(false),
        ..NetworkOptions::default()
    };
    let private = rule_of(Some(&opts)).unwrap();
    assert!(private.admits(Some("tok"), Some("tok")).is_ok());
    let missing = private.admits(None, Some("tok")).unwrap_err();
    assert!(missing.to_string().contains(TRAFFIC_TOKEN_HEADER));
    assert!(private.admits(Some("tox"), Some("tok")).is_err());
    assert!(
        private.admits(Some("tok"), None).is_err(),
        "an unknown sandbox has no token to match"
    );
    // No rule recorded (not made by E2B's create): closed.
    assert!(IngressRule::default().admits(None, Some("tok")).is_err());
}

#[test]
fn mask_request_host_replaces_the_port_and_is_checked() {
    let opts = NetworkOptions {
        mask_request_host: Some("${PORT}-myapp.example.com".into()),
        ..NetworkOptions::default()
    };
    let rule = rule_of(Some(&opts)).unwrap();
    assert_eq!(
        rule.host_seen(3000, "3000-x.localhost"),
        "3000-myapp.example.com"
    );
    assert_eq!(
        rule_of(None).unwrap().host_seen(3000, "3000-x.localhost"),
        "3000-x.localhost"
    );
    for bad in ["my app", "${PORT}/x", "", "a\r\nX-Evil: 1"] {
        let opts = NetworkOptions {
            mask_request_host: Some(bad.into()),
            ..NetworkOptions::default()
        };
        let err = rule_of(Some(&opts)).unwrap_err();
        assert!(err.to_string().contains("maskRequestHost"), "{bad}: {err}");
    }
}
