use std::net::IpAddr;

use super::*;
use crate::addr::parse_ip_literal;

fn class_of(text: &str) -> AddrClass {
    let ip: IpAddr = parse_ip_literal(text).unwrap_or_else(|| panic!("{text} is not a literal"));
    classify(ip)
}

#[test]
fn loopback_in_every_notation() {
    for text in [
        "127.0.0.1",
        "127.255.255.254",
        "2130706433",
        "0x7f000001",
        "017700000001",
        "0177.0.0.1",
        "127.1",
        "[::1]",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "64:ff9b::7f00:1",
    ] {
        assert_eq!(class_of(text), AddrClass::Loopback, "{text}");
    }
}

#[test]
fn metadata_and_link_local() {
    for text in [
        "169.254.169.254",
        "[::ffff:169.254.169.254]",
        "169.254.0.1",
        "fe80::1",
        "febf::1",
    ] {
        assert_eq!(class_of(text), AddrClass::LinkLocal, "{text}");
    }
}

#[test]
fn private_ranges() {
    for text in [
        "10.0.0.1",
        "10.255.255.255",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "fd00::1",
        "fc00::1",
        "fd00:ec2::254",
        "::ffff:192.168.0.1",
    ] {
        assert_eq!(class_of(text), AddrClass::Private, "{text}");
    }
    assert_eq!(class_of("172.15.255.255"), AddrClass::Public);
    assert_eq!(class_of("172.32.0.0"), AddrClass::Public);
}

#[test]
fn cgnat() {
    assert_eq!(class_of("100.64.0.1"), AddrClass::Cgnat);
    assert_eq!(class_of("100.127.255.255"), AddrClass::Cgnat);
    assert_eq!(class_of("100.100.100.200"), AddrClass::Cgnat);
    assert_eq!(class_of("100.128.0.0"), AddrClass::Public);
    assert_eq!(class_of("100.63.255.255"), AddrClass::Public);
}

#[test]
fn unspecified_multicast_broadcast() {
    assert_eq!(class_of("0.0.0.0"), AddrClass::Unspecified);
    assert_eq!(class_of("0"), AddrClass::Unspecified);
    assert_eq!(class_of("::"), AddrClass::Unspecified);
    assert_eq!(class_of("224.0.0.1"), AddrClass::Multicast);
    assert_eq!(class_of("239.255.255.255"), AddrClass::Multicast);
    assert_eq!(class_of("ff02::1"), AddrClass::Multicast);
    assert_eq!(class_of("255.255.255.255"), AddrClass::Broadcast);
    assert_eq!(class_of("4294967295"), AddrClass::Broadcast);
    for class in [
        AddrClass::Unspecified,
        AddrClass::Multicast,
        AddrClass::Broadcast,
    ] {
        assert!(class.is_never_destination());
    }
}

#[test]
fn reserved_ranges() {
    for text in [
        "0.1.2.3",
        "240.0.0.1",
        "254.255.255.255",
        "198.18.0.1",
        "198.19.255.255",
        "192.0.2.1",
        "198.51.100.1",
        "203.0.113.1",
        "192.0.0.1",
        "192.88.99.1",
        "2001:db8::1",
        "2002:7f00:1::",
        "2001::1",
        "2001:2::1",
        "fec0::1",
        "100::1",
        "64:ff9b:1::1",
        "3fff::1",
        "4000::1",
        "::2",
    ] {
        assert_eq!(class_of(text), AddrClass::Reserved, "{text}");
    }
}

#[test]
fn public_addresses() {
    for text in [
        "8.8.8.8",
        "1.1.1.1",
        "2001:4860::8888",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "198.20.0.1",
        "223.255.255.255",
    ] {
        assert_eq!(class_of(text), AddrClass::Public, "{text}");
        assert!(class_of(text).is_public());
    }
}

#[test]
fn only_public_is_public() {
    for class in [
        AddrClass::Loopback,
        AddrClass::Private,
        AddrClass::LinkLocal,
        AddrClass::Cgnat,
        AddrClass::Multicast,
        AddrClass::Unspecified,
        AddrClass::Broadcast,
        AddrClass::Reserved,
    ] {
        assert!(!class.is_public(), "{class:?}");
        assert!(!class.describe().is_empty());
    }
    assert!(AddrClass::LinkLocal.describe().contains("metadata"));
}

#[test]
fn serializes_kebab_case() {
    assert_eq!(
        serde_json::to_string(&AddrClass::LinkLocal).unwrap(),
        "\"link-local\""
    );
}
