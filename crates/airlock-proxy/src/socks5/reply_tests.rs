use super::*;

#[test]
fn replies() {
    assert_eq!(
        reply(Reply::Succeeded, None),
        [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        reply(
            Reply::Succeeded,
            Some("10.1.2.3:8080".parse().unwrap_or_else(|_| unreachable!()))
        ),
        [5, 0, 0, 1, 10, 1, 2, 3, 0x1f, 0x90]
    );
    let v6 = reply(
        Reply::HostUnreachable,
        Some(
            "[2001:db8::1]:443"
                .parse()
                .unwrap_or_else(|_| unreachable!()),
        ),
    );
    assert_eq!(v6.len(), 22);
    assert_eq!(&v6[..4], &[5, 4, 0, 4]);
    assert_eq!(
        &v6[4..20],
        &"2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap_or_else(|_| unreachable!())
            .octets()
    );
    assert_eq!(&v6[20..], &[1, 0xbb]);
}

#[test]
fn reply_codes() {
    let codes = [
        (Reply::Succeeded, 0),
        (Reply::GeneralFailure, 1),
        (Reply::NotAllowedByRuleset, 2),
        (Reply::NetworkUnreachable, 3),
        (Reply::HostUnreachable, 4),
        (Reply::ConnectionRefused, 5),
        (Reply::TtlExpired, 6),
        (Reply::CommandNotSupported, 7),
        (Reply::AddressTypeNotSupported, 8),
    ];
    for (code, byte) in codes {
        assert_eq!(reply(code, None)[1], byte);
    }
}
