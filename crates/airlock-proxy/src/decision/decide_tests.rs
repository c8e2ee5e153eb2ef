use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use super::*;
use crate::decision::SystemResolver;

/// A resolver that answers from a table and records every query. Unknown names fail with
/// NotFound; it never touches the network.
#[derive(Default)]
struct FakeResolver {
    answers: HashMap<String, Vec<IpAddr>>,
    queries: Mutex<Vec<String>>,
}

impl FakeResolver {
    fn with(entries: &[(&str, &[&str])]) -> Self {
        let answers = entries
            .iter()
            .map(|(name, ips)| {
                let ips = ips.iter().map(|ip| ip.parse().unwrap()).collect();
                ((*name).to_owned(), ips)
            })
            .collect();
        FakeResolver {
            answers,
            queries: Mutex::default(),
        }
    }

    fn queries(&self) -> Vec<String> {
        self.queries.lock().unwrap().clone()
    }
}

impl Resolver for FakeResolver {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        self.queries.lock().unwrap().push(name.to_owned());
        self.answers
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

fn rules(allow: &[&str], deny: &[&str], ips: &[&str], map: &[&str]) -> EgressRules {
    EgressRules::parse(
        &strings(allow),
        &strings(deny),
        &strings(ips),
        &strings(map),
    )
    .unwrap()
}

fn sock(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// Asserts a refusal with `reason`, and that its message is one line naming `flag`.
fn assert_deny(decision: &EgressDecision, reason: DenyReason, flag: &str) {
    let EgressDecision::Deny {
        reason: got,
        message,
        ..
    } = decision
    else {
        panic!("expected {reason:?}, got {decision:?}");
    };
    assert_eq!(*got, reason, "{message}");
    assert!(
        message.contains(flag),
        "message does not name {flag}: {message}"
    );
    assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{message:?}"
    );
    assert!(!decision.is_allowed());
}

fn allowed_addrs(decision: &EgressDecision) -> Vec<SocketAddr> {
    match decision {
        EgressDecision::Allow { addrs, .. } => addrs.clone(),
        other => panic!("expected Allow, got {other:?}"),
    }
}

const PUBLIC: &str = "93.184.215.14";

#[test]
fn empty_rules_allow_nothing() {
    let dns = FakeResolver::with(&[("example.com", &[PUBLIC])]);
    let d = decide(&EgressRules::default(), "example.com", 443, &dns, &[]);
    assert_deny(&d, DenyReason::NotAllowed, "--allow-domain example.com:443");
    assert!(dns.queries().is_empty(), "a refused name is never resolved");
}

#[test]
fn allowed_name_resolving_to_public_address() {
    let r = rules(&["*.example.com"], &[], &[], &[]);
    let dns = FakeResolver::with(&[(
        "api.example.com",
        &[PUBLIC, "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    )]);
    let d = decide(&r, "API.Example.com.", 443, &dns, &[]);
    assert_eq!(
        d,
        EgressDecision::Allow {
            host: "api.example.com".into(),
            port: 443,
            addrs: vec![
                sock("93.184.215.14:443"),
                sock("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443")
            ],
            rule: "--allow-domain *.example.com".into(),
        }
    );
    assert_eq!(dns.queries(), ["api.example.com"]);
}

#[test]
fn wildcard_does_not_cover_the_apex_or_lookalikes() {
    let r = rules(&["*.example.com"], &[], &[], &[]);
    let dns = FakeResolver::with(&[("example.com", &[PUBLIC]), ("badexample.com", &[PUBLIC])]);
    assert_deny(
        &decide(&r, "example.com", 443, &dns, &[]),
        DenyReason::NotAllowed,
        "--allow-domain example.com:443",
    );
    assert_deny(
        &decide(&r, "badexample.com", 443, &dns, &[]),
        DenyReason::NotAllowed,
        "--allow-domain",
    );
    assert!(dns.queries().is_empty());
}

#[test]
fn deny_wins_over_allow() {
    let r = rules(&["*.example.com"], &["evil.example.com"], &[], &[]);
    let dns = FakeResolver::with(&[
        ("evil.example.com", &[PUBLIC]),
        ("good.example.com", &[PUBLIC]),
    ]);
    let d = decide(&r, "EVIL.example.com.", 443, &dns, &[]);
    assert_deny(
        &d,
        DenyReason::DeniedDomain,
        "--deny-domain evil.example.com",
    );
    let EgressDecision::Deny { rule, host, .. } = &d else {
        unreachable!()
    };
    assert_eq!(rule.as_deref(), Some("--deny-domain evil.example.com"));
    assert_eq!(host, "evil.example.com");
    assert!(decide(&r, "good.example.com", 443, &dns, &[]).is_allowed());
    assert_eq!(dns.queries(), ["good.example.com"]);
}

#[test]
fn deny_wildcard_and_idna_forms() {
    let r = rules(
        &["a.xn--bcher-kva.example"],
        &["*.bücher.example"],
        &[],
        &[],
    );
    let dns = FakeResolver::with(&[("a.xn--bcher-kva.example", &[PUBLIC])]);
    assert_deny(
        &decide(&r, "A.BÜCHER.example", 443, &dns, &[]),
        DenyReason::DeniedDomain,
        "--deny-domain *.xn--bcher-kva.example",
    );
    assert_deny(
        &decide(&r, "a.xn--bcher-kva.example", 443, &dns, &[]),
        DenyReason::DeniedDomain,
        "--deny-domain",
    );
}

#[test]
fn port_aware_deny_and_allow() {
    let r = rules(&["api.example.com:443"], &["*.example.com:80"], &[], &[]);
    let dns = FakeResolver::with(&[("api.example.com", &[PUBLIC])]);
    assert!(decide(&r, "api.example.com", 443, &dns, &[]).is_allowed());
    // The deny rule is for port 80 only, and there it wins.
    assert_deny(
        &decide(&r, "api.example.com", 80, &dns, &[]),
        DenyReason::DeniedDomain,
        "--deny-domain *.example.com:80",
    );
    let d = decide(&r, "api.example.com", 8443, &dns, &[]);
    assert_deny(
        &d,
        DenyReason::PortNotAllowed,
        "--allow-domain api.example.com:8443",
    );
    let EgressDecision::Deny { rule, message, .. } = &d else {
        unreachable!()
    };
    assert_eq!(rule.as_deref(), Some("--allow-domain api.example.com:443"));
    assert!(
        message.contains("--allow-domain api.example.com:443"),
        "{message}"
    );
}

#[test]
fn port_zero_and_malformed_hosts_are_bad() {
    let r = rules(&["*.example.com"], &[], &["0.0.0.0/0", "::/0"], &[]);
    let dns = FakeResolver::with(&[("a.example.com", &[PUBLIC])]);
    assert_deny(
        &decide(&r, "a.example.com", 0, &dns, &[]),
        DenyReason::BadHost,
        "--allow-domain",
    );
    for host in [
        "",
        "user@a.example.com",
        "a.example.com@evil.test",
        "a.example.com/x",
        "a.example.com\\x",
        "a.example.com:443",
        "a.example.com ",
        " a.example.com",
        "a.example.com\r\nHost: evil",
        "a.example.com\0",
        "a.exa mple.com",
        "fe80::1%eth0",
        "[fe80::1%25eth0]",
        "[::1",
        "a_b.example.com",
        "a..example.com",
        "-a.example.com",
        "*.example.com",
        "1.2.3.4.5",
        "xn--a.example.com",
    ] {
        let d = decide(&r, host, 443, &dns, &[]);
        assert_deny(&d, DenyReason::BadHost, "--allow-domain");
        assert!(d.message().unwrap().contains("--allow-ip"));
    }
    assert!(dns.queries().is_empty());
}

#[test]
fn bad_host_echo_is_bounded_and_escaped() {
    let long = format!("{}\n", "a".repeat(10_000));
    let d = decide(
        &EgressRules::default(),
        &long,
        443,
        &FakeResolver::default(),
        &[],
    );
    let EgressDecision::Deny { host, message, .. } = &d else {
        panic!("{d:?}")
    };
    assert!(
        host.len() < 300 && message.len() < 700,
        "{} {}",
        host.len(),
        message.len()
    );
    assert!(!message.contains('\n'));
}

#[test]
fn ip_literals_in_every_notation_need_a_grant() {
    let r = rules(&["*.example.com"], &[], &[], &[]);
    let dns = FakeResolver::default();
    for host in [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "017700000001",
        "0177.0.0.1",
        "127.1",
        "127.0.1",
        "127.0.0.1.",
        "[::1]",
        "::1",
        "::ffff:127.0.0.1",
        "[::ffff:7f00:1]",
        "[::ffff:169.254.169.254]",
        "169.254.169.254",
        "100.64.0.1",
        "10.0.0.1",
        "192.168.1.1",
        "[fd00::1]",
        "8.8.8.8",
        "[2001:4860::8888]",
        "１２７.０.０.１",
    ] {
        assert_deny(
            &decide(&r, host, 443, &dns, &[]),
            DenyReason::IpLiteralNotGranted,
            "--allow-ip",
        );
    }
    assert!(dns.queries().is_empty());
    let d = decide(&r, "0x7f.1", 8080, &dns, &[]);
    assert_eq!(
        d.message().map(|m| m.contains("--allow-ip 127.0.0.1:8080")),
        Some(true),
        "{d:?}"
    );
    let d = decide(&r, "[::1]", 443, &dns, &[]);
    assert_eq!(
        d.message().map(|m| m.contains("--allow-ip [::1]:443")),
        Some(true),
        "{d:?}"
    );
}

#[test]
fn granted_ip_literals_are_allowed_in_any_notation() {
    let r = rules(
        &[],
        &[],
        &["127.0.0.1", "[::1]:443", "10.0.0.0/8:5432"],
        &[],
    );
    let dns = FakeResolver::default();
    for host in [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",
    ] {
        let d = decide(&r, host, 80, &dns, &[]);
        assert_eq!(allowed_addrs(&d), [sock("127.0.0.1:80")], "{host}");
        let EgressDecision::Allow {
            host: shown, rule, ..
        } = &d
        else {
            unreachable!()
        };
        assert_eq!(shown, "127.0.0.1");
        assert_eq!(rule, "--allow-ip 127.0.0.1");
    }
    assert_eq!(
        allowed_addrs(&decide(&r, "[::1]", 443, &dns, &[])),
        [sock("[::1]:443")]
    );
    assert_eq!(
        allowed_addrs(&decide(&r, "10.9.8.7", 5432, &dns, &[])),
        [sock("10.9.8.7:5432")]
    );
}

#[test]
fn port_limited_ip_grants() {
    let r = rules(&[], &[], &["[::1]:443", "10.0.0.0/8:5432"], &[]);
    let dns = FakeResolver::default();
    let d = decide(&r, "[::1]", 80, &dns, &[]);
    assert_deny(&d, DenyReason::PortNotAllowed, "--allow-ip [::1]:80");
    let EgressDecision::Deny { rule, .. } = &d else {
        unreachable!()
    };
    assert_eq!(rule.as_deref(), Some("--allow-ip [::1]:443"));
    assert_deny(
        &decide(&r, "10.0.0.1", 22, &dns, &[]),
        DenyReason::PortNotAllowed,
        "--allow-ip 10.0.0.1:22",
    );
    assert_deny(
        &decide(&r, "11.0.0.1", 5432, &dns, &[]),
        DenyReason::IpLiteralNotGranted,
        "--allow-ip 11.0.0.1:5432",
    );
}

#[test]
fn never_destinations_cannot_be_granted() {
    let r = rules(&["any.test"], &[], &["0.0.0.0/0", "::/0"], &[]);
    let dns = FakeResolver::with(&[(
        "any.test",
        &["0.0.0.0", "224.0.0.1", "255.255.255.255", "::"],
    )]);
    for host in [
        "0.0.0.0",
        "0",
        "[::]",
        "224.0.0.1",
        "255.255.255.255",
        "[ff02::1]",
    ] {
        let d = decide(&r, host, 80, &dns, &[]);
        assert_eq!(
            d.deny_reason(),
            Some(DenyReason::ForbiddenAddress),
            "{host}: {d:?}"
        );
    }
    let d = decide(&r, "any.test", 80, &dns, &[]);
    assert_eq!(d.deny_reason(), Some(DenyReason::ForbiddenAddress), "{d:?}");
}

#[test]
fn name_resolving_to_private_address_is_refused_unless_granted() {
    let dns = FakeResolver::with(&[("db.example.com", &["10.1.2.3"])]);
    let r = rules(&["db.example.com"], &[], &[], &[]);
    let d = decide(&r, "db.example.com", 5432, &dns, &[]);
    assert_deny(&d, DenyReason::ForbiddenAddress, "--allow-ip 10.1.2.3:5432");
    let m = d.message().unwrap();
    assert!(
        m.contains("private") && m.contains("--allow-domain db.example.com"),
        "{m}"
    );

    let r = rules(&["db.example.com"], &[], &["10.0.0.0/8"], &[]);
    let d = decide(&r, "db.example.com", 5432, &dns, &[]);
    assert_eq!(allowed_addrs(&d), [sock("10.1.2.3:5432")]);
    let EgressDecision::Allow { rule, .. } = &d else {
        unreachable!()
    };
    assert_eq!(rule, "--allow-domain db.example.com, --allow-ip 10.0.0.0/8");

    // A grant for another port does not help.
    let r = rules(&["db.example.com"], &[], &["10.0.0.0/8:443"], &[]);
    assert_deny(
        &decide(&r, "db.example.com", 5432, &dns, &[]),
        DenyReason::ForbiddenAddress,
        "--allow-ip",
    );
}

#[test]
fn every_special_class_is_refused_by_name() {
    let cases = [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "metadata"),
        ("::ffff:169.254.169.254", "metadata"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("172.16.0.1", "private"),
        ("192.168.0.1", "private"),
        ("fd00::1", "private"),
        ("198.18.0.1", "reserved"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
    ];
    let r = rules(&["x.example.com"], &[], &[], &[]);
    for (ip, what) in cases {
        let dns = FakeResolver::with(&[("x.example.com", &[ip])]);
        let d = decide(&r, "x.example.com", 443, &dns, &[]);
        assert_deny(&d, DenyReason::ForbiddenAddress, "--allow-ip");
        assert!(d.message().unwrap().contains(what), "{ip}: {d:?}");
    }
}

#[test]
fn mixed_resolution_keeps_only_allowed_addresses() {
    let dns = FakeResolver::with(&[(
        "mixed.example.com",
        &[
            "10.0.0.5",
            PUBLIC,
            "127.0.0.1",
            "::ffff:93.184.215.14",
            "169.254.169.254",
            "2606:4700::1111",
            "192.168.1.1",
        ],
    )]);
    let r = rules(&["mixed.example.com"], &[], &["192.168.0.0/16"], &[]);
    let d = decide(&r, "mixed.example.com", 443, &dns, &[]);
    // Resolver order kept; the IPv4-mapped duplicate collapses into the first occurrence.
    assert_eq!(
        allowed_addrs(&d),
        [
            sock("93.184.215.14:443"),
            sock("[2606:4700::1111]:443"),
            sock("192.168.1.1:443")
        ]
    );
}

#[test]
fn mapped_host_needs_an_ip_grant_and_never_hits_dns() {
    let dns = FakeResolver::with(&[("svc.test", &[PUBLIC])]);
    let r = rules(&["svc.test"], &[], &[], &["svc.test=127.0.0.1"]);
    let d = decide(&r, "svc.test", 8080, &dns, &[]);
    assert_deny(
        &d,
        DenyReason::ForbiddenAddress,
        "--allow-ip 127.0.0.1:8080",
    );
    assert!(
        d.message()
            .unwrap()
            .contains("--map-host svc.test=127.0.0.1"),
        "{d:?}"
    );

    let r = rules(&["svc.test"], &[], &["127.0.0.1"], &["svc.test=127.0.0.1"]);
    let d = decide(&r, "SVC.test.", 8080, &dns, &[]);
    assert_eq!(allowed_addrs(&d), [sock("127.0.0.1:8080")]);
    assert!(
        dns.queries().is_empty(),
        "the resolver was called for a mapped name: {:?}",
        dns.queries()
    );
}

#[test]
fn mapping_alone_grants_nothing() {
    let dns = FakeResolver::default();
    let r = rules(&[], &[], &["127.0.0.1"], &["svc.test=127.0.0.1"]);
    assert_deny(
        &decide(&r, "svc.test", 80, &dns, &[]),
        DenyReason::NotAllowed,
        "--allow-domain svc.test:80",
    );
    // Deny still wins over a mapping.
    let r = rules(
        &["svc.test"],
        &["svc.test"],
        &["127.0.0.1"],
        &["svc.test=127.0.0.1"],
    );
    assert_deny(
        &decide(&r, "svc.test", 80, &dns, &[]),
        DenyReason::DeniedDomain,
        "--deny-domain svc.test",
    );
    assert!(dns.queries().is_empty());
}

#[test]
fn host_own_addresses_are_refused_unless_granted() {
    let own: [IpAddr; 2] = [
        "203.0.114.7".parse().unwrap(),
        "::ffff:198.51.99.1".parse().unwrap(),
    ];
    let dns = FakeResolver::with(&[
        ("me.example.com", &["203.0.114.7"]),
        ("me6.example.com", &["198.51.99.1", PUBLIC]),
    ]);
    let r = rules(&["*.example.com"], &[], &[], &[]);
    let d = decide(&r, "me.example.com", 22, &dns, &own);
    assert_deny(
        &d,
        DenyReason::ForbiddenAddress,
        "--allow-ip 203.0.114.7:22",
    );
    assert!(d.message().unwrap().contains("this host's own address"));
    // Own address compared canonically, other addresses kept.
    assert_eq!(
        allowed_addrs(&decide(&r, "me6.example.com", 443, &dns, &own)),
        [sock("93.184.215.14:443")]
    );

    let r = rules(&["*.example.com"], &[], &["203.0.114.7:22"], &[]);
    assert_eq!(
        allowed_addrs(&decide(&r, "me.example.com", 22, &dns, &own)),
        [sock("203.0.114.7:22")]
    );
}

#[test]
fn resolver_failure_and_empty_answer() {
    let r = rules(&["*.example.com"], &[], &[], &[]);
    let dns = FakeResolver::with(&[("empty.example.com", &[])]);
    let d = decide(&r, "gone.example.com", 443, &dns, &[]);
    assert_deny(
        &d,
        DenyReason::ResolveFailed,
        "--map-host gone.example.com=",
    );
    assert!(d
        .message()
        .unwrap()
        .contains("--allow-domain *.example.com"));
    assert_deny(
        &decide(&r, "empty.example.com", 443, &dns, &[]),
        DenyReason::ResolveFailed,
        "--map-host",
    );
}

#[test]
fn decisions_serialize_for_audit() {
    let r = rules(&["a.example.com"], &[], &[], &[]);
    let dns = FakeResolver::with(&[("a.example.com", &[PUBLIC])]);
    let json = serde_json::to_value(decide(&r, "a.example.com", 443, &dns, &[])).unwrap();
    assert_eq!(json["decision"], "allow");
    assert_eq!(json["addrs"][0], "93.184.215.14:443");
    let json = serde_json::to_value(decide(&r, "b.example.com", 443, &dns, &[])).unwrap();
    assert_eq!(json["decision"], "deny");
    assert_eq!(json["reason"], "not-allowed");
    assert_eq!(json["rule"], serde_json::Value::Null);
}

#[test]
fn system_resolver_is_usable_as_a_trait_object() {
    // Only the type is checked: tests never query DNS.
    let _resolver: &dyn Resolver = &SystemResolver;
}

#[test]
fn public_internet_allows_public_names_only() {
    let r = rules(&[], &["blocked.example"], &[], &[]).with_public_internet(true);
    let resolver = FakeResolver::with(&[
        ("public.example", &["93.184.216.34"]),
        ("internal.example", &["10.1.2.3"]),
        ("loop.example", &["127.0.0.1"]),
        ("metadata.example", &["169.254.169.254"]),
        ("blocked.example", &["93.184.216.35"]),
        ("mixed.example", &["10.0.0.1", "93.184.216.36"]),
    ]);
    match decide(&r, "public.example", 443, &resolver, &[]) {
        EgressDecision::Allow { rule, .. } => assert_eq!(rule, PUBLIC_INTERNET_RULE),
        other => panic!("{other:?}"),
    }
    assert!(!decide(
        &r.clone().with_public_internet(false),
        "public.example",
        443,
        &resolver,
        &[]
    )
    .is_allowed());
    for refused in [
        "internal.example",
        "loop.example",
        "metadata.example",
        "blocked.example",
    ] {
        assert!(
            !decide(&r, refused, 443, &resolver, &[]).is_allowed(),
            "{refused}"
        );
    }
    // Only the public address of a mixed answer is used.
    match decide(&r, "mixed.example", 80, &resolver, &[]) {
        EgressDecision::Allow { addrs, .. } => assert_eq!(
            addrs,
            vec!["93.184.216.36:80".parse::<SocketAddr>().unwrap()]
        ),
        other => panic!("{other:?}"),
    }
    // IP literals still need a grant; the host's own addresses stay refused.
    assert!(!decide(&r, "93.184.216.34", 443, &resolver, &[]).is_allowed());
    let own: IpAddr = "93.184.216.34".parse().unwrap();
    assert!(!decide(&r, "public.example", 443, &resolver, &[own]).is_allowed());
}

#[test]
fn deny_ip_wins_over_allow_ip_and_public_internet() {
    // A literal: refused even inside an allowed range.
    let r = rules(&[], &[], &["127.0.0.0/8"], &[])
        .with_deny_ips(&strings(&["127.0.0.7", "10.0.0.0/8:22"]))
        .unwrap();
    let dns = FakeResolver::default();
    assert_deny(
        &decide(&r, "127.0.0.7", 80, &dns, &[]),
        DenyReason::DeniedAddress,
        "deny_ip 127.0.0.7",
    );
    assert_eq!(
        allowed_addrs(&decide(&r, "127.0.0.8", 80, &dns, &[])),
        [sock("127.0.0.8:80")]
    );
    // A public address named by a public-internet rule: refused by address.
    let r = rules(&[], &[], &[], &[])
        .with_public_internet(true)
        .with_deny_ips(&strings(&[PUBLIC]))
        .unwrap();
    let dns = FakeResolver::with(&[
        ("one.example", &[PUBLIC]),
        ("both.example", &[PUBLIC, "93.184.215.15"]),
    ]);
    let d = decide(&r, "one.example", 443, &dns, &[]);
    assert_deny(&d, DenyReason::ForbiddenAddress, "deny_ip 93.184.215.14");
    // Only the denied address of a name is dropped; the other stays reachable.
    assert_eq!(
        allowed_addrs(&decide(&r, "both.example", 443, &dns, &[])),
        [sock("93.184.215.15:443")]
    );
    // Ports: a port-scoped deny leaves the other ports.
    let r = rules(&[], &[], &["10.0.0.0/8"], &[])
        .with_deny_ips(&strings(&["10.0.0.0/8:22"]))
        .unwrap();
    assert_deny(
        &decide(&r, "10.1.2.3", 22, &dns, &[]),
        DenyReason::DeniedAddress,
        "deny_ip",
    );
    assert!(decide(&r, "10.1.2.3", 443, &dns, &[]).is_allowed());
}

#[test]
fn a_bad_deny_ip_fails_the_rule_set_naming_the_key() {
    let err = rules(&[], &[], &[], &[])
        .with_deny_ips(&strings(&["not-an-address"]))
        .unwrap_err();
    assert!(err.to_string().contains("deny_ip"), "{err}");
}

#[test]
fn from_egress_keeps_every_key() {
    let e = airlock_policy::Egress {
        allow_domain: strings(&["a.example"]),
        deny_domain: strings(&["b.example"]),
        allow_ip: strings(&["10.0.0.0/8"]),
        deny_ip: strings(&["10.0.0.1"]),
        map_host: strings(&["a.example=10.0.0.2"]),
        public_internet: true,
        ..airlock_policy::Egress::default()
    };
    let r = EgressRules::from_egress(&e).unwrap();
    assert_eq!(
        (
            r.allow_domains.len(),
            r.deny_domains.len(),
            r.allow_ips.len(),
            r.deny_ips.len()
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(r.map_hosts.len(), 1);
    assert!(r.public_internet);
}
