use std::net::IpAddr;

use super::*;

fn grant(text: &str) -> IpGrant {
    IpGrant::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn parses_every_documented_form() {
    let cases: &[(&str, &str, Option<u16>)] = &[
        ("10.0.0.0/8", "10.0.0.0/8", None),
        ("127.0.0.1", "127.0.0.1/32", None),
        ("127.0.0.1:8080", "127.0.0.1/32", Some(8080)),
        ("10.0.0.0/8:443", "10.0.0.0/8", Some(443)),
        ("[::1]:443", "::1/128", Some(443)),
        ("[::1]", "::1/128", None),
        ("::1", "::1/128", None),
        ("::1/128", "::1/128", None),
        ("[2001:db8::]/32:443", "2001:db8::/32", Some(443)),
        ("[2001:db8::/32]:443", "2001:db8::/32", Some(443)),
        ("[2001:db8::]/32", "2001:db8::/32", None),
        ("0.0.0.0/0", "0.0.0.0/0", None),
        ("::/0", "::/0", None),
    ];
    for (text, net, port) in cases {
        let g = grant(text);
        assert_eq!(g.net.to_string(), *net, "{text}");
        assert_eq!(g.port, *port, "{text}");
    }
}

#[test]
fn ipv4_mapped_grants_become_ipv4() {
    assert_eq!(grant("::ffff:127.0.0.1").net.to_string(), "127.0.0.1/32");
    assert_eq!(grant("::ffff:10.0.0.0/104").net.to_string(), "10.0.0.0/8");
    assert!(grant("::ffff:127.0.0.1").matches(ip("127.0.0.1"), 80));
}

#[test]
fn displays_as_written() {
    for text in [
        "10.0.0.0/8",
        "127.0.0.1",
        "127.0.0.1:8080",
        "10.0.0.0/8:443",
        "[::1]:443",
        "::1",
        "2001:db8::/32",
        "[2001:db8::/32]:443",
    ] {
        assert_eq!(grant(text).to_string(), text);
        assert_eq!(grant(&grant(text).to_string()), grant(text));
    }
}

#[test]
fn refuses_malformed() {
    for text in [
        "",
        "localhost",
        "10.0.0.0/33",
        "::1/129",
        "10.0.0/8",
        "127.1",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "2130706433",
        "[::1",
        "[::1]x",
        "[::1]:",
        "[::1/128]/64",
        "fe80::1%eth0",
        "10.0.0.0/8/8",
        "10.0.0.0/+8",
        "10.0.0.0/",
        "[127.0.0.1]:80:80",
    ] {
        assert!(
            IpGrant::parse(text).is_err(),
            "{text}: {:?}",
            IpGrant::parse(text)
        );
    }
}

#[test]
fn refuses_bad_ports() {
    for text in [
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:http",
        "[::1]:0",
        "10.0.0.0/8:",
    ] {
        assert!(
            matches!(IpGrant::parse(text), Err(RuleError::InvalidPort { .. })),
            "{text}: {:?}",
            IpGrant::parse(text)
        );
    }
}

#[test]
fn refuses_host_bits_with_a_suggestion() {
    let err = IpGrant::parse("10.1.2.3/8").unwrap_err();
    assert!(matches!(err, RuleError::GrantHostBits { .. }));
    assert!(err.to_string().contains("10.0.0.0/8"), "{err}");
}

#[test]
fn matches_range_and_port() {
    let g = grant("10.0.0.0/8:443");
    assert!(g.matches(ip("10.1.2.3"), 443));
    assert!(!g.matches(ip("10.1.2.3"), 80));
    assert!(!g.matches(ip("11.0.0.1"), 443));
    assert!(
        g.matches(ip("::ffff:10.0.0.1"), 443),
        "mapped addresses are compared canonically"
    );
    assert!(g.covers(ip("10.1.2.3")));
    let any = grant("::1");
    assert!(any.matches(ip("::1"), 1) && any.matches(ip("::1"), 65535));
    assert!(!any.matches(ip("127.0.0.1"), 1));
}

#[test]
fn serializes_net_as_text() {
    let json = serde_json::to_string(&grant("10.0.0.0/8:443")).unwrap();
    assert_eq!(json, r#"{"net":"10.0.0.0/8","port":443}"#);
}
