use super::*;
use crate::decision::DenyReason;

fn deny(host: &str, port: u16, reason: DenyReason, rule: Option<&str>) -> EgressDecision {
    EgressDecision::Deny {
        host: host.into(),
        port,
        reason,
        rule: rule.map(str::to_string),
        message: "refused".into(),
    }
}

#[test]
fn a_name_not_in_the_allowlist_offers_its_exact_grant() {
    let d = denial_of(&deny("api.example", 443, DenyReason::NotAllowed, None), &[]).unwrap();
    assert_eq!(d.kind, DenialKind::Network);
    assert_eq!(d.what, "api.example:443");
    assert_eq!(d.reason, "not-allowed");
    assert_eq!(d.grant.as_deref(), Some("api.example:443"));
    assert_eq!(d.flag.as_deref(), Some("--allow-domain api.example:443"));
    let d = denial_of(
        &deny("93.184.216.34", 443, DenyReason::IpLiteralNotGranted, None),
        &[],
    )
    .unwrap();
    assert_eq!(d.grant.as_deref(), Some("93.184.216.34:443"));
    assert_eq!(d.flag.as_deref(), Some("--allow-ip 93.184.216.34:443"));
}

#[test]
fn nothing_is_offered_for_what_no_grant_may_open() {
    for (host, reason, rule) in [
        (
            "evil.example",
            DenyReason::DeniedDomain,
            Some("evil.example"),
        ),
        ("169.254.169.254", DenyReason::IpLiteralNotGranted, None),
        ("10.0.0.1", DenyReason::IpLiteralNotGranted, None),
        ("inside.example", DenyReason::ForbiddenAddress, None),
        ("gone.example", DenyReason::ResolveFailed, None),
    ] {
        let d = denial_of(&deny(host, 80, reason, rule), &[]).unwrap();
        assert_eq!((d.grant, d.flag), (None, None), "{host}");
        assert_eq!(d.rule.as_deref(), rule);
    }
    // This host's own public address neither.
    let own: IpAddr = "93.184.216.9".parse().unwrap();
    let d = denial_of(
        &deny("93.184.216.9", 80, DenyReason::IpLiteralNotGranted, None),
        &[own],
    )
    .unwrap();
    assert_eq!(d.grant, None);
    assert_eq!(d.what, "93.184.216.9:80");
    let d = denial_of(&deny("2001:db8::1", 443, DenyReason::NotAllowed, None), &[]).unwrap();
    assert_eq!(d.what, "[2001:db8::1]:443");
}

#[test]
fn an_allowed_decision_is_no_denial() {
    let allow = EgressDecision::Allow {
        host: "a.example".into(),
        port: 443,
        addrs: Vec::new(),
        rule: "a.example".into(),
    };
    assert_eq!(denial_of(&allow, &[]), None);
}
