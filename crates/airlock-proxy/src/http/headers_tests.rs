#![allow(clippy::unwrap_used)]
use super::*;

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn header_lines() {
    assert_eq!(
        parse_header_line(b"Name: value").unwrap(),
        ("Name".into(), "value".into())
    );
    assert_eq!(parse_header_line(b"a:b").unwrap(), ("a".into(), "b".into()));
    assert_eq!(
        parse_header_line(b"X: \t v a l \t").unwrap(),
        ("X".into(), "v a l".into())
    );
    assert_eq!(
        parse_header_line(b"X: a:b").unwrap(),
        ("X".into(), "a:b".into())
    );
    assert_eq!(parse_header_line(b"X:").unwrap(), ("X".into(), "".into()));
    assert_eq!(
        parse_header_line(b"!#$%&'*+-.^_`|~09aZ: v").unwrap().0,
        "!#$%&'*+-.^_`|~09aZ"
    );
}

#[test]
fn malformed_header_lines() {
    for line in [
        &b"Name : v"[..],
        b"Name",
        b": v",
        b"Na me: v",
        b"N\xc3\xa9: v",
        b"N(x): v",
        b"X: a\0",
        b"X: \x1b[31m",
        b"X: a\x7f",
    ] {
        assert!(
            matches!(parse_header_line(line), Err(HttpError::Header(_))),
            "{line:?}"
        );
    }
    assert_eq!(parse_header_line(b" X: v"), Err(HttpError::ObsFold));
    assert_eq!(parse_header_line(b"\tX: v"), Err(HttpError::ObsFold));
}

#[test]
fn content_length() {
    let v11 = HttpVersion::Http11;
    assert_eq!(
        check_framing(&h(&[("Content-Length", "5")]), v11),
        Ok(BodyFraming::Length(5))
    );
    assert_eq!(
        check_framing(&h(&[("Content-Length", "5"), ("content-length", "5")]), v11),
        Ok(BodyFraming::Length(5))
    );
    assert_eq!(
        check_framing(&h(&[("Content-Length", "5, 5")]), v11),
        Ok(BodyFraming::Length(5))
    );
    assert_eq!(
        check_framing(&h(&[("Content-Length", "0018446744073709551615")]), v11),
        Err(HttpError::Framing("Content-Length is not a decimal number"))
    );
    assert_eq!(
        check_framing(&h(&[("Content-Length", "9999999999999999999")]), v11),
        Ok(BodyFraming::Length(9_999_999_999_999_999_999))
    );
    assert_eq!(
        check_framing(&h(&[("Content-Length", "0")]), HttpVersion::Http10),
        Ok(BodyFraming::Length(0))
    );
    assert_eq!(check_framing(&h(&[("X", "1")]), v11), Ok(BodyFraming::None));
    assert_eq!(
        check_framing(&[], HttpVersion::Http10),
        Ok(BodyFraming::None)
    );
    for value in [&["5", "6"][..], &["5, 6"], &["5", "05"]] {
        let headers: Vec<_> = value
            .iter()
            .map(|v| ("Content-Length".to_string(), v.to_string()))
            .collect();
        assert_eq!(
            check_framing(&headers, v11),
            Err(HttpError::Framing("conflicting Content-Length values")),
            "{value:?}"
        );
    }
    for value in [
        "",
        "-1",
        "+5",
        "5 5",
        "0x10",
        "1e3",
        "99999999999999999999",
        "5,",
    ] {
        assert_eq!(
            check_framing(&h(&[("Content-Length", value)]), v11),
            Err(HttpError::Framing("Content-Length is not a decimal number")),
            "{value:?}"
        );
    }
}

#[test]
fn transfer_encoding() {
    let v11 = HttpVersion::Http11;
    assert_eq!(
        check_framing(&h(&[("Transfer-Encoding", "chunked")]), v11),
        Ok(BodyFraming::Chunked)
    );
    assert!(check_framing(&h(&[("Transfer-Encoding", "gzip, Chunked")]), v11).is_ok());
    assert!(check_framing(
        &h(&[
            ("Transfer-Encoding", "gzip"),
            ("transfer-encoding", "chunked")
        ]),
        v11
    )
    .is_ok());
    for headers in [
        h(&[("Transfer-Encoding", "gzip")]),
        h(&[("Transfer-Encoding", "chunked, gzip")]),
        h(&[("Transfer-Encoding", "chunked, chunked")]),
        h(&[
            ("Transfer-Encoding", "chunked"),
            ("Transfer-Encoding", "chunked"),
        ]),
        h(&[("Transfer-Encoding", "")]),
        h(&[("Transfer-Encoding", "x ,, chunked")]),
        h(&[("Transfer-Encoding", "chunked"), ("Content-Length", "0")]),
        h(&[("Content-Length", "3"), ("Transfer-Encoding", "chunked")]),
    ] {
        assert!(
            matches!(check_framing(&headers, v11), Err(HttpError::Framing(_))),
            "{headers:?}"
        );
    }
    assert!(matches!(
        check_framing(&h(&[("Transfer-Encoding", "chunked")]), HttpVersion::Http10),
        Err(HttpError::Framing(_))
    ));
}
