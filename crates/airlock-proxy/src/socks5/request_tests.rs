#![allow(clippy::unwrap_used)]
use super::*;
use crate::socks5::Reply;

fn domain_request(name: &[u8], port: u16) -> Vec<u8> {
    let mut buf = vec![5, 1, 0, 3, u8::try_from(name.len()).unwrap()];
    buf.extend_from_slice(name);
    buf.extend_from_slice(&port.to_be_bytes());
    buf
}

fn ok(buf: &[u8]) -> (SocksHost, u16) {
    let (dest, consumed) = parse_request(buf).unwrap().unwrap();
    assert_eq!(consumed, buf.len());
    dest
}

#[test]
fn address_types() {
    assert_eq!(
        ok(&[5, 1, 0, 1, 93, 184, 216, 34, 0x01, 0xbb]),
        (SocksHost::Ip("93.184.216.34".parse().unwrap()), 443)
    );
    let mut v6 = vec![5, 1, 0, 4];
    v6.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    v6.extend_from_slice(&[0, 80]);
    assert_eq!(ok(&v6), (SocksHost::Ip("2001:db8::1".parse().unwrap()), 80));
    assert_eq!(
        ok(&domain_request(b"example.com", 443)),
        (SocksHost::Domain("example.com".into()), 443)
    );
    assert_eq!(
        ok(&domain_request(b"a", 65535)),
        (SocksHost::Domain("a".into()), 65535)
    );
    // Not normalised here: IP literals as names, case, trailing dots, UTF-8 names.
    assert_eq!(
        ok(&domain_request(b"127.0.0.1", 1)),
        (SocksHost::Domain("127.0.0.1".into()), 1)
    );
    assert_eq!(
        ok(&domain_request(b"Ex.COM.", 1)),
        (SocksHost::Domain("Ex.COM.".into()), 1)
    );
    assert_eq!(
        ok(&domain_request("b\u{fc}cher.de".as_bytes(), 1)),
        (SocksHost::Domain("b\u{fc}cher.de".into()), 1)
    );
    let long = vec![b'a'; MAX_DOMAIN];
    assert_eq!(
        ok(&domain_request(&long, 1)).0,
        SocksHost::Domain("a".repeat(255))
    );
}

#[test]
fn trailing_bytes_are_not_consumed() {
    let mut buf = domain_request(b"h", 443);
    buf.extend_from_slice(b"\x16\x03\x01");
    assert_eq!(parse_request(&buf).unwrap().unwrap().1, buf.len() - 3);
}

#[test]
fn every_prefix_needs_more_bytes() {
    let mut v6 = vec![5, 1, 0, 4];
    v6.extend_from_slice(&[0xfe; 16]);
    v6.extend_from_slice(&[1, 0]);
    for buf in [
        vec![5, 1, 0, 1, 10, 0, 0, 1, 0, 22],
        v6,
        domain_request(b"example.com", 443),
        domain_request(&[b'x'; 255], 443),
    ] {
        let full = parse_request(&buf).unwrap().unwrap();
        for i in 0..buf.len() {
            assert_eq!(parse_request(&buf[..i]), Ok(None), "{i}");
        }
        assert_eq!(full.1, buf.len());
    }
}

#[test]
fn refused_requests_and_their_replies() {
    let cases: Vec<(Vec<u8>, SocksError, Option<Reply>)> = vec![
        (vec![4, 1, 0, 80], SocksError::Socks4Unsupported, None),
        (vec![6, 1, 0, 1], SocksError::BadVersion(6), None),
        (
            vec![5, 2, 0, 1, 0, 0, 0, 0, 0, 0],
            SocksError::UnsupportedCommand(2),
            Some(Reply::CommandNotSupported),
        ),
        (
            vec![5, 3, 0, 1, 0, 0, 0, 0, 0, 0],
            SocksError::UnsupportedCommand(3),
            Some(Reply::CommandNotSupported),
        ),
        (
            vec![5, 0, 0, 1],
            SocksError::UnsupportedCommand(0),
            Some(Reply::CommandNotSupported),
        ),
        (
            vec![5, 9, 0, 1],
            SocksError::UnsupportedCommand(9),
            Some(Reply::CommandNotSupported),
        ),
        (
            vec![5, 1, 1, 1, 1, 2, 3, 4, 0, 80],
            SocksError::NonZeroReserved,
            Some(Reply::GeneralFailure),
        ),
        (
            vec![5, 1, 0, 2, 1, 2, 3, 4, 0, 80],
            SocksError::UnsupportedAddressType(2),
            Some(Reply::AddressTypeNotSupported),
        ),
        (
            vec![5, 1, 0, 0],
            SocksError::UnsupportedAddressType(0),
            Some(Reply::AddressTypeNotSupported),
        ),
        (
            vec![5, 1, 0, 1, 1, 2, 3, 4, 0, 0],
            SocksError::PortZero,
            Some(Reply::GeneralFailure),
        ),
        (
            domain_request(b"h", 0),
            SocksError::PortZero,
            Some(Reply::GeneralFailure),
        ),
        (
            vec![5, 1, 0, 3, 0, 0, 80],
            SocksError::InvalidDomain("the name is empty"),
            Some(Reply::GeneralFailure),
        ),
        (
            domain_request(b"\xff\xfe", 80),
            SocksError::InvalidDomain("the name is not UTF-8"),
            Some(Reply::GeneralFailure),
        ),
        (
            domain_request(b"\xe2\x82", 80),
            SocksError::InvalidDomain("the name is not UTF-8"),
            Some(Reply::GeneralFailure),
        ),
    ];
    for (buf, err, reply) in cases {
        assert_eq!(parse_request(&buf), Err(err.clone()), "{buf:?}");
        assert_eq!(err.reply(), reply, "{err:?}");
        // Checked in byte order: every prefix needs more bytes or gets the same error.
        for i in 0..buf.len() {
            match parse_request(&buf[..i]) {
                Ok(None) => {}
                other => assert_eq!(other, Err(err.clone()), "{buf:?} prefix {i}"),
            }
        }
    }
    for name in [
        &b"evil.com\0.allowed.com"[..],
        b"a\nb",
        b"a\rb",
        b"a b",
        b"a\tb",
        b"\x7f",
        "a\u{85}b".as_bytes(),
        "a\u{2028}b".as_bytes(),
    ] {
        let err = parse_request(&domain_request(name, 80)).unwrap_err();
        assert!(matches!(err, SocksError::InvalidDomain(_)), "{name:?}");
        assert_eq!(err.reply(), Some(Reply::GeneralFailure));
    }
}
