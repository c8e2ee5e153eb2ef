#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn greetings() {
    assert_eq!(parse_greeting(&[5, 1, 0]), Ok(Some((true, 3))));
    assert_eq!(parse_greeting(&[5, 2, 2, 0]), Ok(Some((true, 4))));
    assert_eq!(parse_greeting(&[5, 1, 2]), Ok(Some((false, 3))));
    assert_eq!(parse_greeting(&[5, 2, 1, 2, 0xaa]), Ok(Some((false, 4))));
    // A request pipelined after the greeting is not consumed.
    assert_eq!(parse_greeting(&[5, 1, 0, 5, 1, 0, 1]), Ok(Some((true, 3))));
    let mut all = vec![5, 255];
    all.extend(0..=254u8);
    assert_eq!(parse_greeting(&all), Ok(Some((true, 257))));
}

#[test]
fn every_prefix_needs_more_bytes() {
    let mut all = vec![5, 255];
    all.extend((1..=255u8).rev());
    for greeting in [&[5, 1, 0][..], &[5, 3, 1, 2, 0], &all] {
        let full = parse_greeting(greeting).unwrap();
        for i in 0..greeting.len() {
            assert_eq!(parse_greeting(&greeting[..i]), Ok(None), "{i}");
        }
        assert!(full.is_some());
    }
}

#[test]
fn refused_greetings() {
    assert_eq!(parse_greeting(&[4]), Err(SocksError::Socks4Unsupported));
    assert_eq!(
        parse_greeting(&[4, 1, 0, 80, 127, 0, 0, 1, 0]),
        Err(SocksError::Socks4Unsupported)
    );
    assert_eq!(
        parse_greeting(b"GET / HTTP/1.1"),
        Err(SocksError::BadVersion(b'G'))
    );
    assert_eq!(parse_greeting(&[0]), Err(SocksError::BadVersion(0)));
    assert_eq!(parse_greeting(&[5, 0]), Err(SocksError::NoMethods));
    assert_eq!(parse_greeting(&[5, 0, 0]), Err(SocksError::NoMethods));
    for err in [
        SocksError::Socks4Unsupported,
        SocksError::BadVersion(6),
        SocksError::NoMethods,
    ] {
        assert_eq!(err.reply(), None);
    }
    assert!(SocksError::Socks4Unsupported
        .to_string()
        .contains("SOCKS4 is not supported"));
    assert_eq!(SOCKS4_REJECTED[1], 91);
}

#[test]
fn protocol_detection() {
    assert!(looks_like_socks5(5));
    for b in [4u8, 0, b'G', b'C', 0x16] {
        assert!(!looks_like_socks5(b));
    }
}

#[test]
fn method_replies() {
    assert_eq!(METHOD_NO_AUTH_REPLY, [5, 0]);
    assert_eq!(METHOD_NONE_ACCEPTABLE, [5, 0xff]);
}
