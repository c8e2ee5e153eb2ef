#![allow(clippy::unwrap_used)]
use super::*;

const GET11: Answering = Answering {
    head_request: false,
    version: HttpVersion::Http11,
};

fn parse(text: &str) -> Result<Option<(UpstreamHead, usize)>, UpstreamError> {
    parse_response_head(text.as_bytes(), GET11)
}

fn head(text: &str) -> UpstreamHead {
    let (head, len) = parse(text).unwrap().unwrap();
    assert!(len <= text.len());
    head
}

fn client_head(text: &str) -> String {
    String::from_utf8(head(text).client_head).unwrap()
}

#[test]
fn the_client_gets_connection_close_and_no_hop_by_hop_headers() {
    assert_eq!(
        client_head("HTTP/1.1 200 OK\r\nServer: s\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nx-hop: 1\r\nContent-Length: 2\r\n\r\nok"),
        "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        client_head("HTTP/1.0 404\nA:b\n\n"),
        "HTTP/1.0 404\r\nA: b\r\nConnection: close\r\n\r\n"
    );
    // obs-text survives; the reason phrase is kept.
    let text = b"HTTP/1.1 200 Fine \xff\r\nContent-Disposition: x\xe9\r\n\r\n";
    let (h, _) = parse_response_head(text, GET11).unwrap().unwrap();
    assert_eq!(
        h.client_head,
        b"HTTP/1.1 200 Fine \xff\r\nContent-Disposition: x\xe9\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn where_the_body_ends() {
    let framed = |f| ResponseBody::Framed(f);
    let cases = [
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            framed(BodyFraming::Length(5)),
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
            framed(BodyFraming::Length(5)),
        ),
        (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            framed(BodyFraming::Chunked),
        ),
        (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
            framed(BodyFraming::Chunked),
        ),
        (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            ResponseBody::UntilClose,
        ),
        ("HTTP/1.1 200 OK\r\n\r\n", ResponseBody::UntilClose),
        (
            "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
            framed(BodyFraming::None),
        ),
        (
            "HTTP/1.1 304 Not Modified\r\n\r\n",
            framed(BodyFraming::None),
        ),
        ("HTTP/1.1 100 Continue\r\n\r\n", framed(BodyFraming::None)),
    ];
    for (text, want) in cases {
        assert_eq!(head(text).body, want, "{text:?}");
    }
    // With Transfer-Encoding, Content-Length is not passed on.
    assert!(!client_head(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
    )
    .contains("Content-Length"));
    // A HEAD response keeps its Content-Length but has no body.
    let (h, _) = parse_response_head(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
        Answering {
            head_request: true,
            version: HttpVersion::Http11,
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(h.body, framed(BodyFraming::None));
    assert!(String::from_utf8(h.client_head)
        .unwrap()
        .contains("Content-Length: 5\r\n"));
}

#[test]
fn interim_responses() {
    let h = head("HTTP/1.1 100 Continue\r\nConnection: keep-alive\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    assert!(h.is_interim());
    assert_eq!(h.client_head, b"HTTP/1.1 100 Continue\r\n\r\n");
    let (_, len) = parse("HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(len, "HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\n".len());
    let (h, _) = parse_response_head(
        b"HTTP/1.1 100 Continue\r\n\r\n",
        Answering {
            head_request: false,
            version: HttpVersion::Http10,
        },
    )
    .unwrap()
    .unwrap();
    assert!(h.is_interim() && h.client_head.is_empty());
}

#[test]
fn malformed_heads_are_refused() {
    let cases = [
        ("HTTP/2 200 OK\r\n\r\n", UpstreamError::StatusLine),
        ("HTTP/1.1 20 OK\r\n\r\n", UpstreamError::StatusLine),
        ("HTTP/1.1 200OK\r\n\r\n", UpstreamError::StatusLine),
        ("HTTP/1.1 099 x\r\n\r\n", UpstreamError::StatusLine),
        ("hello world\r\n\r\n", UpstreamError::StatusLine),
        ("HTTP/1.1 200 O\x01K\r\n\r\n", UpstreamError::StatusLine),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
            UpstreamError::SwitchingProtocols,
        ),
        (
            "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",
            UpstreamError::Header,
        ),
        ("HTTP/1.1 200 OK\r\nA b\r\n\r\n", UpstreamError::Header),
        ("HTTP/1.1 200 OK\r\nA: b\x00\r\n\r\n", UpstreamError::Header),
        (
            "HTTP/1.1 200 OK\r\nA: b\rX: y\r\n\r\n",
            UpstreamError::BareCarriageReturn,
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            UpstreamError::ContentLength,
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            UpstreamError::ContentLength,
        ),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text), Err(want), "{text:?}");
    }
    assert_eq!(parse("HTTP/1.1 200 OK\r\nA: b\r\n"), Ok(None));
    let big = format!(
        "HTTP/1.1 200 OK\r\nA: {}\r\n",
        "x".repeat(MAX_RESPONSE_HEAD)
    );
    assert_eq!(parse(&big), Err(UpstreamError::HeadTooLarge));
    let mut many = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..=MAX_RESPONSE_HEADERS {
        many.push_str(&format!("X-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(parse(&many), Err(UpstreamError::TooManyHeaders));
}
