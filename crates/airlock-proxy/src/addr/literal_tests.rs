use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

fn v4(a: u8, b: u8, c: u8, d: u8) -> Option<IpAddr> {
    Some(IpAddr::V4(Ipv4Addr::new(a, b, c, d)))
}

#[test]
fn loopback_in_every_ipv4_notation() {
    for text in [
        "127.0.0.1",
        "127.0.0.1.",
        "2130706433",
        "0x7f000001",
        "0X7F000001",
        "017700000001",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "0x7f.0x0.0x0.0x1",
        "0177.0.0.01",
        "127.1",
        "127.0.1",
        "0x7f.1",
        "0000000177.0.0.1",
        "0x000000007f.1",
    ] {
        assert_eq!(parse_ip_literal(text), v4(127, 0, 0, 1), "{text}");
    }
}

#[test]
fn metadata_address_in_other_notations() {
    for text in [
        "169.254.169.254",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "169.254.43518",
    ] {
        assert_eq!(parse_ip_literal(text), v4(169, 254, 169, 254), "{text}");
    }
}

#[test]
fn zero_forms() {
    assert_eq!(parse_ip_literal("0"), v4(0, 0, 0, 0));
    assert_eq!(parse_ip_literal("0x"), v4(0, 0, 0, 0));
    assert_eq!(parse_ip_literal("0.0.0.0"), v4(0, 0, 0, 0));
}

#[test]
fn out_of_range_and_malformed_ipv4_are_not_literals() {
    for text in [
        "256.0.0.1",
        "1.2.3.4.5",
        "4294967296",
        "127.16777216",
        "127.0.65536",
        "08.0.0.1",
        "0x7g.0.0.1",
        "1..1",
        ".1.2.3",
        "1.2.3.4..",
        "",
        ".",
        "+1.2.3.4",
        "-1",
        "1.2.3.4 ",
        "example.com",
        "a.1",
        "99999999999999999999999",
    ] {
        assert_eq!(parse_ip_literal(text), None, "{text:?}");
    }
}

#[test]
fn ipv6_bare_and_bracketed() {
    assert_eq!(
        parse_ip_literal("::1"),
        Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
    );
    assert_eq!(
        parse_ip_literal("[::1]"),
        Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
    );
    assert_eq!(
        parse_ip_literal("[::]"),
        Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED))
    );
    assert_eq!(
        parse_ip_literal("2001:4860::8888"),
        Some(IpAddr::V6("2001:4860::8888".parse().unwrap()))
    );
    assert_eq!(
        parse_ip_literal("[FD00::1]"),
        Some(IpAddr::V6("fd00::1".parse().unwrap()))
    );
}

#[test]
fn ipv6_with_zone_or_broken_brackets_is_refused() {
    for text in [
        "fe80::1%eth0",
        "[fe80::1%25eth0]",
        "[::1",
        "::1]",
        "[127.0.0.1]",
        "[::1]:443",
        "[]",
        ":::",
    ] {
        assert_eq!(parse_ip_literal(text), None, "{text}");
    }
}

#[test]
fn ipv6_embedding_ipv4_becomes_ipv4() {
    for text in [
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "[::ffff:7f00:1]",
        "::FFFF:127.0.0.1",
        "::ffff:0:127.0.0.1",
        "::127.0.0.1",
        "::7f00:1",
        "64:ff9b::127.0.0.1",
        "64:ff9b::7f00:1",
    ] {
        assert_eq!(parse_ip_literal(text), v4(127, 0, 0, 1), "{text}");
    }
    assert_eq!(
        parse_ip_literal("[::ffff:169.254.169.254]"),
        v4(169, 254, 169, 254)
    );
}

#[test]
fn ipv6_own_loopback_and_unspecified_stay_ipv6() {
    assert_eq!(embedded_ipv4(Ipv6Addr::LOCALHOST), None);
    assert_eq!(embedded_ipv4(Ipv6Addr::UNSPECIFIED), None);
    assert_eq!(embedded_ipv4("2001:db8::1".parse().unwrap()), None);
    assert_eq!(embedded_ipv4("64:ff9b:1::7f00:1".parse().unwrap()), None);
}

#[test]
fn canonical_maps_only_ipv4_mapped() {
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    assert_eq!(canonical(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    let nat64: IpAddr = "64:ff9b::a00:1".parse().unwrap();
    assert_eq!(canonical(nat64), nat64);
    let v6: IpAddr = "::1".parse().unwrap();
    assert_eq!(canonical(v6), v6);
}
