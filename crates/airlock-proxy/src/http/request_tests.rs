#![allow(clippy::unwrap_used)]
use super::*;
use crate::http::MAX_HEADERS;

fn parse(text: &str) -> Result<Option<(ProxyRequest, usize)>, HttpError> {
    parse_request(text.as_bytes())
}

fn parsed(text: &str) -> ProxyRequest {
    let (req, len) = parse(text).unwrap().unwrap();
    assert_eq!(len, text.len(), "head length of {text:?}");
    req
}

fn refused(text: &str) -> HttpError {
    parse(text).unwrap_err()
}

fn forward(
    method: &str,
    host: &str,
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> ProxyRequest {
    ProxyRequest::Forward {
        method: method.into(),
        host: host.into(),
        port,
        path: path.into(),
        version: HttpVersion::Http11,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: BodyFraming::None,
    }
}

fn connect(host: &str, port: u16) -> ProxyRequest {
    ProxyRequest::Connect {
        host: host.into(),
        port,
    }
}

#[test]
fn connect_forms() {
    assert_eq!(
        parsed("CONNECT example.com:443 HTTP/1.1\r\n\r\n"),
        connect("example.com", 443)
    );
    assert_eq!(
        parsed("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: curl/8\r\n\r\n"),
        connect("example.com", 443)
    );
    assert_eq!(
        parsed("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
        connect("::1", 8443)
    );
    assert_eq!(
        parsed("CONNECT [2001:DB8:0:0::1]:443 HTTP/1.0\r\n\r\n"),
        connect("2001:db8::1", 443)
    );
    assert_eq!(
        parsed("CONNECT 10.0.0.1:22 HTTP/1.1\r\n\r\n"),
        connect("10.0.0.1", 22)
    );
}

#[test]
fn connect_requires_port_and_authority_form() {
    assert!(matches!(
        refused("CONNECT example.com HTTP/1.1\r\n\r\n"),
        HttpError::Authority(_)
    ));
    assert!(matches!(
        refused("CONNECT example.com: HTTP/1.1\r\n\r\n"),
        HttpError::Authority(_)
    ));
    assert!(matches!(
        refused("CONNECT example.com:0 HTTP/1.1\r\n\r\n"),
        HttpError::Authority(_)
    ));
    assert!(matches!(
        refused("CONNECT http://example.com:443/ HTTP/1.1\r\n\r\n"),
        HttpError::Target(_)
    ));
    assert_eq!(
        refused("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n"),
        HttpError::Userinfo
    );
    // Methods are case-sensitive: `connect` is an ordinary method and needs an absolute URI.
    assert_eq!(
        refused("connect example.com:443 HTTP/1.1\r\n\r\n"),
        HttpError::NotProxyRequest
    );
}

#[test]
fn bytes_after_the_head_are_not_consumed() {
    let text = "CONNECT example.com:443 HTTP/1.1\r\n\r\n\x16\x03\x01tls hello";
    let (req, len) = parse(text).unwrap().unwrap();
    assert_eq!(req, connect("example.com", 443));
    assert_eq!(&text[len..], "\x16\x03\x01tls hello");

    let text = "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    let (_, len) = parse(text).unwrap().unwrap();
    assert_eq!(&text[len..], "hello");
}

#[test]
fn forward_forms() {
    assert_eq!(
        parsed("GET http://example.com/a/b?q=1&r HTTP/1.1\r\nAccept: */*\r\n\r\n"),
        forward("GET", "example.com", 80, "/a/b?q=1&r", &[("Accept", "*/*")])
    );
    assert_eq!(
        parsed("GET http://example.com HTTP/1.1\r\n\r\n"),
        forward("GET", "example.com", 80, "/", &[])
    );
    assert_eq!(
        parsed("GET http://example.com?x HTTP/1.1\r\n\r\n"),
        forward("GET", "example.com", 80, "/?x", &[])
    );
    assert_eq!(
        parsed("GET HTTP://Example.COM:8080/ HTTP/1.1\r\n\r\n"),
        forward("GET", "Example.COM", 8080, "/", &[])
    );
    assert_eq!(
        parsed("GET http://[::1]:8080/ HTTP/1.1\r\n\r\n"),
        forward("GET", "::1", 8080, "/", &[])
    );
    assert_eq!(
        parsed("GET http://[::1]/x HTTP/1.1\r\n\r\n"),
        forward("GET", "::1", 80, "/x", &[])
    );
    assert_eq!(
        parsed("DELETE http://h:1/ HTTP/1.1\r\nX-A: 1\r\nx-b:2\r\nX-C:  spaced  value \t\r\nX-Empty:\r\n\r\n"),
        forward("DELETE", "h", 1, "/", &[("X-A", "1"), ("x-b", "2"), ("X-C", "spaced  value"), ("X-Empty", "")])
    );
    let ProxyRequest::Forward { version, .. } = parsed("GET http://h/ HTTP/1.0\r\n\r\n") else {
        panic!("not a forward request");
    };
    assert_eq!(version, HttpVersion::Http10);
}

#[test]
fn utf8_header_values_are_kept() {
    assert_eq!(
        parsed("GET http://h/ HTTP/1.1\r\nX-Name: caf\u{e9}\r\n\r\n"),
        forward("GET", "h", 80, "/", &[("X-Name", "caf\u{e9}")])
    );
    let bytes = b"GET http://h/ HTTP/1.1\r\nX-Name: \xff\xfe\r\n\r\n";
    assert_eq!(
        parse_request(bytes).unwrap_err(),
        HttpError::Header("a header value is not UTF-8")
    );
}

#[test]
fn bare_lf_line_endings_are_tolerated() {
    // Documented choice: LF alone ends a line (as in most servers); CR alone is refused.
    assert_eq!(parsed("CONNECT h:443 HTTP/1.1\n\n"), connect("h", 443));
    assert_eq!(
        parsed("GET http://h/ HTTP/1.1\nA: 1\r\nB: 2\n\r\n"),
        forward("GET", "h", 80, "/", &[("A", "1"), ("B", "2")])
    );
}

#[test]
fn bare_cr_is_refused() {
    assert_eq!(
        refused("GET http://h/ HTTP/1.1\rX: 1\r\n\r\n"),
        HttpError::BareCarriageReturn
    );
    assert_eq!(
        refused("GET http://h/ HTTP/1.1\r\nX: a\rInjected: 1\r\n\r\n"),
        HttpError::BareCarriageReturn
    );
    assert_eq!(
        refused("GET http://h/ HTTP/1.1\r\n\r\r\n"),
        HttpError::BareCarriageReturn
    );
    // A CR as the very last byte may still be followed by LF.
    assert_eq!(parse("GET http://h/ HTTP/1.1\r"), Ok(None));
}

#[test]
fn header_injection_is_refused() {
    assert!(matches!(
        refused("GET http://h/ HTTP/1.1\r\nX: a\0b\r\n\r\n"),
        HttpError::Header(_)
    ));
    assert!(matches!(
        refused("GET http://h/ HTTP/1.1\r\nX: a\x0bb\r\n\r\n"),
        HttpError::Header(_)
    ));
    assert!(matches!(
        refused("GET http://h/ HTTP/1.1\r\nX: a\x7fb\r\n\r\n"),
        HttpError::Header(_)
    ));
    assert!(matches!(
        refused("GET http://h/ HTTP/1.1\r\nX\0: a\r\n\r\n"),
        HttpError::Header(_)
    ));
    assert_eq!(
        refused("GET http://h/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"),
        HttpError::ObsFold
    );
    assert_eq!(
        refused("GET http://h/ HTTP/1.1\r\n\tX: a\r\n\r\n"),
        HttpError::ObsFold
    );
}

#[test]
fn malformed_request_lines() {
    for text in [
        "\r\n\r\n",
        "\r\nGET http://h/ HTTP/1.1\r\n\r\n",
        "GET  http://h/ HTTP/1.1\r\n\r\n",
        "GET http://h/  HTTP/1.1\r\n\r\n",
        " GET http://h/ HTTP/1.1\r\n\r\n",
        "GET http://h/ HTTP/1.1 \r\n\r\n",
        "GET\thttp://h/ HTTP/1.1\r\n\r\n",
        "GET http://h/\r\n\r\n",
        "GET\r\n\r\n",
        "GET http://h/ http/1.1\r\n\r\n",
        "GET http://h/ HTTP/1\r\n\r\n",
        "GET http://h/ HTTP/1.1.1\r\n\r\n",
        "GET http://h/ a b\r\n\r\n",
        "G(T http://h/ HTTP/1.1\r\n\r\n",
        "G\u{e9}T http://h/ HTTP/1.1\r\n\r\n",
    ] {
        let err = refused(text);
        assert!(
            matches!(err, HttpError::RequestLine(_)),
            "{text:?}: {err:?}"
        );
        assert_eq!(err.status(), 400);
    }
    for text in [
        "GET http://h/ HTTP/2.0\r\n\r\n",
        "GET http://h/ HTTP/1.2\r\n\r\n",
        "GET http://h/ HTTP/0.9\r\n\r\n",
    ] {
        assert_eq!(refused(text), HttpError::UnsupportedVersion, "{text:?}");
        assert_eq!(refused(text).status(), 505);
    }
    for text in [
        "GET http://h/\u{e9} HTTP/1.1\r\n\r\n",
        "GET http://h/\x01 HTTP/1.1\r\n\r\n",
    ] {
        assert!(matches!(refused(text), HttpError::Target(_)), "{text:?}");
    }
}

#[test]
fn targets_that_are_not_proxy_requests() {
    assert_eq!(
        refused("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
        HttpError::NotProxyRequest
    );
    assert_eq!(
        refused("OPTIONS * HTTP/1.1\r\n\r\n"),
        HttpError::NotProxyRequest
    );
    assert_eq!(
        refused("GET example.com HTTP/1.1\r\n\r\n"),
        HttpError::NotProxyRequest
    );
    assert_eq!(
        refused("GET https://h/ HTTP/1.1\r\n\r\n"),
        HttpError::HttpsNeedsConnect
    );
    assert_eq!(
        refused("GET HTTPS://h/ HTTP/1.1\r\n\r\n"),
        HttpError::HttpsNeedsConnect
    );
    assert_eq!(
        refused("GET ftp://h/ HTTP/1.1\r\n\r\n"),
        HttpError::UnsupportedScheme
    );
    assert_eq!(
        refused("GET ws://h/ HTTP/1.1\r\n\r\n"),
        HttpError::UnsupportedScheme
    );
    assert!(matches!(
        refused("GET http://h/#frag HTTP/1.1\r\n\r\n"),
        HttpError::Target(_)
    ));
    assert_eq!(HttpError::HttpsNeedsConnect.status(), 400);
}

#[test]
fn userinfo_trick_is_refused() {
    for target in [
        "http://allowed.example@other.example/",
        "http://allowed.example:80@other.example/",
        "http://user:pass@allowed.example/",
        "http://@allowed.example/",
        "http://allowed.example\\@other.example/",
    ] {
        let err = refused(&format!("GET {target} HTTP/1.1\r\n\r\n"));
        assert_eq!(err, HttpError::Userinfo, "{target}");
    }
    // `@` after the authority is path, not userinfo.
    assert_eq!(
        parsed("GET http://allowed.example/@other.example HTTP/1.1\r\n\r\n"),
        forward("GET", "allowed.example", 80, "/@other.example", &[])
    );
    assert_eq!(
        parsed("GET http://allowed.example?@other.example HTTP/1.1\r\n\r\n"),
        forward("GET", "allowed.example", 80, "/?@other.example", &[])
    );
}

#[test]
fn every_prefix_of_a_valid_head_needs_more_bytes() {
    for text in [
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        "CONNECT [::1]:443 HTTP/1.0\r\n\r\n",
        "GET http://example.com:8080/p?q HTTP/1.1\r\nA: 1\r\nB:\r\n\r\n",
        "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET http://h/ HTTP/1.1\nA: 1\n\n",
    ] {
        let full = parse(text).unwrap().unwrap();
        for i in 0..text.len() {
            assert_eq!(parse(&text[..i]), Ok(None), "prefix {:?}", &text[..i]);
        }
        let mut extended = text.as_bytes().to_vec();
        extended.extend_from_slice(b"body bytes\r\n\r\n");
        assert_eq!(parse_request(&extended).unwrap().unwrap(), full);
    }
}

#[test]
fn every_prefix_of_a_malformed_head_needs_more_bytes_or_gets_the_same_error() {
    for text in [
        "GET http://h/ HTTP/1.1\r\nX: a\rb\r\n\r\n",
        "GET  http://h/ HTTP/1.1\r\n\r\n",
        "GET http://u@h/ HTTP/1.1\r\n\r\n",
        "GET http://h/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET http://h/ HTTP/1.1\r\n folded\r\n\r\n",
    ] {
        let err = refused(text);
        for i in 0..text.len() {
            match parse(&text[..i]) {
                Ok(None) => {}
                Err(e) => assert_eq!(e, err, "prefix {:?}", &text[..i]),
                Ok(Some(r)) => panic!("prefix {:?} parsed as {r:?}", &text[..i]),
            }
        }
    }
}

#[test]
fn head_size_limit() {
    let start = "GET http://h/ HTTP/1.1\r\nX-Pad: ";
    let end = "\r\n\r\n";
    let exact = format!(
        "{start}{}{end}",
        "a".repeat(MAX_HEAD - start.len() - end.len())
    );
    assert_eq!(exact.len(), MAX_HEAD);
    assert_eq!(parse(&exact).unwrap().unwrap().1, MAX_HEAD);

    let over = format!(
        "{start}{}{end}",
        "a".repeat(MAX_HEAD + 1 - start.len() - end.len())
    );
    assert_eq!(refused(&over), HttpError::HeadTooLarge);
    assert_eq!(refused(&over).status(), 431);

    let unterminated = format!("{start}{}", "a".repeat(MAX_HEAD));
    assert_eq!(parse(&unterminated[..MAX_HEAD - 1]), Ok(None));
    assert_eq!(refused(&unterminated[..MAX_HEAD]), HttpError::HeadTooLarge);
    assert_eq!(refused(&unterminated), HttpError::HeadTooLarge);
}

#[test]
fn header_count_limit() {
    let head = |n: usize| {
        let mut text = String::from("GET http://h/ HTTP/1.1\r\n");
        for i in 0..n {
            text.push_str(&format!("X-{i}: v\r\n"));
        }
        text + "\r\n"
    };
    assert!(parse(&head(MAX_HEADERS)).unwrap().is_some());
    assert_eq!(refused(&head(MAX_HEADERS + 1)), HttpError::TooManyHeaders);
    assert_eq!(HttpError::TooManyHeaders.status(), 431);
}

#[test]
fn framing_is_checked_for_both_kinds() {
    let err = refused(
        "POST http://h/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert!(matches!(err, HttpError::Framing(_)));
    let err = refused("CONNECT h:443 HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n");
    assert!(matches!(err, HttpError::Framing(_)));
}
