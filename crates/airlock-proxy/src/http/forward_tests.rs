#![allow(clippy::unwrap_used)]
use super::*;
use crate::http::{parse_request, BodyFraming, HttpVersion};

fn head_of(text: &str) -> String {
    let (req, _) = parse_request(text.as_bytes()).unwrap().unwrap();
    String::from_utf8(forward_head(&req)).unwrap()
}

#[test]
fn exact_bytes() {
    assert_eq!(
        head_of("GET http://example.com/a?b HTTP/1.1\r\nHost: evil.example\r\nAccept: */*\r\nUser-Agent: curl/8.5\r\n\r\n"),
        "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nUser-Agent: curl/8.5\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        head_of("HEAD http://example.com:8080 HTTP/1.0\r\n\r\n"),
        "HEAD / HTTP/1.0\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        head_of("GET http://[::1]:8080/x HTTP/1.1\r\n\r\n"),
        "GET /x HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        head_of("GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n"),
        "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn hop_by_hop_and_proxy_headers_are_dropped() {
    let text = "POST http://h/p HTTP/1.1\r\n\
        Proxy-Connection: keep-alive\r\n\
        Proxy-Authorization: Basic c2VjcmV0\r\n\
        Connection: keep-alive, X-Secret, Upgrade\r\n\
        Keep-Alive: timeout=5\r\n\
        TE: trailers\r\n\
        Trailer: X-T\r\n\
        Upgrade: websocket\r\n\
        x-secret: 1\r\n\
        host: h\r\n\
        HOST: other\r\n\
        Content-Type: text/plain\r\n\
        Content-Length: 4\r\n\
        \r\n";
    assert_eq!(
        head_of(text),
        "POST /p HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn framing_headers_survive_connection_tokens() {
    let text = "POST http://h/ HTTP/1.1\r\nConnection: Transfer-Encoding, content-length\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        head_of(text),
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn connect_has_no_upstream_head() {
    let req = ProxyRequest::Connect {
        host: "h".into(),
        port: 443,
    };
    assert!(forward_head(&req).is_empty());
}

#[test]
fn unsafe_header_lines_built_by_hand_are_skipped() {
    let req = ProxyRequest::Forward {
        method: "GET".into(),
        host: "h".into(),
        port: 80,
        path: "/".into(),
        version: HttpVersion::Http11,
        headers: vec![
            ("X-Ok".into(), "1".into()),
            ("X-Bad".into(), "a\r\nInjected: yes".into()),
            ("X-Bad\r\nInjected".into(), "yes".into()),
            ("X-Nul".into(), "a\0".into()),
        ],
        body: BodyFraming::None,
    };
    assert_eq!(
        String::from_utf8(forward_head(&req)).unwrap(),
        "GET / HTTP/1.1\r\nHost: h\r\nX-Ok: 1\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn framing_is_written_once_from_the_checked_request() {
    let post = "POST http://h/ HTTP/1.1\r\n";
    // Duplicate and zero-padded lengths become one canonical header, after the others.
    assert_eq!(
        head_of(&format!(
            "{post}Content-Length: 007\r\nX-A: 1\r\ncontent-length: 007, 007\r\n\r\n"
        )),
        "POST / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 7\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        head_of(&format!(
            "{post}Transfer-Encoding: gzip\r\nX-A: 1\r\ntransfer-encoding:  chunked \r\n\r\n"
        )),
        "POST / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        head_of(&format!("{post}Content-Length: 0\r\n\r\n")),
        "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}
