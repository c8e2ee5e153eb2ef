#![allow(clippy::unwrap_used)]
use super::*;

struct Response {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// A strict reader of the responses written here: CRLF lines, `HTTP/1.1 NNN reason`, token
/// header names, no control characters, body length equal to Content-Length.
fn read(bytes: &[u8]) -> Response {
    let text = std::str::from_utf8(bytes).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let rest = status_line.strip_prefix("HTTP/1.1 ").unwrap();
    let (code, reason) = rest.split_once(' ').unwrap();
    assert_eq!(code.len(), 3);
    let mut headers = Vec::new();
    for line in lines {
        assert!(!line.bytes().any(|b| b < 0x20 || b == 0x7f), "{line:?}");
        let (name, value) = line.split_once(": ").unwrap();
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        headers.push((name.to_owned(), value.to_owned()));
    }
    let response = Response {
        status: code.parse().unwrap(),
        reason: reason.into(),
        headers,
        body: body.into(),
    };
    assert_eq!(
        response.header("Content-Length").parse::<usize>().unwrap(),
        response.body.len()
    );
    assert_eq!(response.header("Connection"), "close");
    assert!(response.header("Content-Type").starts_with("text/plain"));
    assert!(response.body.ends_with('\n'));
    assert_eq!(response.body.matches('\n').count(), 1);
    response
}

impl Response {
    fn header(&self, name: &str) -> &str {
        let mut values = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let value = &values.next().unwrap().1;
        assert!(values.next().is_none(), "duplicate {name}");
        value
    }
}

#[test]
fn denied_response_is_a_valid_403() {
    let r = read(&denied_response(
        "not-in-allowlist",
        "evil.example:443 is not in the allowlist",
    ));
    assert_eq!(r.status, 403);
    assert_eq!(r.reason, "Forbidden");
    assert_eq!(r.header("X-Airlock-Denied"), "not-in-allowlist");
    assert_eq!(r.body, "evil.example:443 is not in the allowlist\n");
}

#[test]
fn denied_reason_is_sanitised() {
    let reason = |raw: &str| {
        read(&denied_response(raw, "m"))
            .header("X-Airlock-Denied")
            .to_owned()
    };
    assert_eq!(reason("Private Address"), "private-address");
    assert_eq!(reason("x\r\nSet-Cookie: a=b"), "x--set-cookie--a-b");
    assert_eq!(reason(""), "denied");
    assert_eq!(reason("\r\n"), "denied");
    assert_eq!(reason("caf\u{e9}"), "caf");
    assert_eq!(reason(&"a".repeat(1000)).len(), 64);
}

#[test]
fn messages_stay_on_one_line() {
    let r = read(&denied_response(
        "r",
        "line one\r\nX-Injected: 1\r\n\r\nline two",
    ));
    assert_eq!(r.body, "line one  X-Injected: 1    line two\n");
    let r = read(&error_response(400, &"\u{e9}".repeat(2000)));
    assert!(r.body.len() <= 1025);
    assert_eq!(r.body.chars().filter(|&c| c == '\u{e9}').count(), 512);
}

#[test]
fn error_responses() {
    for (status, reason) in [
        (400, "Bad Request"),
        (405, "Method Not Allowed"),
        (431, "Request Header Fields Too Large"),
        (502, "Bad Gateway"),
        (504, "Gateway Timeout"),
        (505, "HTTP Version Not Supported"),
        (418, "Client Error"),
        (599, "Server Error"),
    ] {
        let r = read(&error_response(status, "upstream failed"));
        assert_eq!((r.status, r.reason.as_str()), (status, reason));
        assert!(r.headers.iter().all(|(n, _)| n != "X-Airlock-Denied"));
        assert_eq!(r.body, "upstream failed\n");
    }
    for status in [0, 99, 200, 302, 600, 65535] {
        assert_eq!(read(&error_response(status, "m")).status, 500);
    }
    assert_eq!(
        error_response(502, "no route"),
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 9\r\nConnection: close\r\n\r\nno route\n"
    );
}

#[test]
fn every_http_error_fits_a_response() {
    use crate::http::HttpError;
    for err in [
        HttpError::HeadTooLarge,
        HttpError::Userinfo,
        HttpError::UnsupportedVersion,
        HttpError::Framing("x"),
    ] {
        let r = read(&error_response(err.status(), &err.to_string()));
        assert_eq!(r.status, err.status());
    }
}

#[test]
fn connect_established() {
    assert_eq!(
        CONNECT_ESTABLISHED,
        b"HTTP/1.1 200 Connection established\r\n\r\n"
    );
}
