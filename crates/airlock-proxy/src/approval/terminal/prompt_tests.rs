use super::*;

fn request(host: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: 3,
        protocol: "connect".into(),
        host: host.into(),
        port: 443,
        addrs: vec![],
        reason: "not-allowed".into(),
        rule: Some("allow_domain api.example:80".into()),
        message: "api.example:443 is not in the allowlist".into(),
        grant: "api.example:443".into(),
        time_ms: 0,
        deadline_ms: 30_000,
        process: None,
    }
}

#[test]
fn the_question_names_host_port_rule_and_every_answer() {
    let q = question(
        &request("api.example"),
        Some(Path::new("/p/policy.toml")),
        30,
    );
    assert!(q.contains("approval #3"), "{q}");
    assert!(q.contains("api.example:443 (connect)"), "{q}");
    assert!(q.contains("rule: allow_domain api.example:80"), "{q}");
    assert!(q.contains("[o] allow once"), "{q}");
    assert!(q.contains("[r] allow for this run"), "{q}");
    assert!(q.contains("[s] allow and save to /p/policy.toml"), "{q}");
    assert!(q.contains("[d] deny"), "{q}");
    assert!(q.contains("deny in 30 s"), "{q}");
    let q = question(&request("api.example"), None, 5);
    assert!(q.contains("no --policy file"), "{q}");
}

#[test]
fn nothing_from_the_request_can_send_an_escape_sequence() {
    let q = question(&request("evil\u{1b}[2J\u{7}\r\nname"), None, 1);
    assert!(!q.contains('\u{1b}'), "{q:?}");
    assert!(!q.contains('\u{7}'), "{q:?}");
    assert!(q.contains("evil?[2J??"), "{q:?}");
}

#[test]
fn keys() {
    assert_eq!(key(b'o'), Key::Once);
    assert_eq!(key(b'R'), Key::Run);
    assert_eq!(key(b's'), Key::Save);
    for b in [b'd', b'n', 0x03, 0x04] {
        assert_eq!(key(b), Key::Deny);
    }
    for b in [b'\r', b'\n', b'y', b' ', 0x1b] {
        assert_eq!(key(b), Key::Other);
    }
}
