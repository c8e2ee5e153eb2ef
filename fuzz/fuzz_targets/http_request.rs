//! HTTP proxy request heads: `parse_request` on arbitrary bytes, and on success the upstream
//! head built by `forward_head`, checked for a single well-formed head (no injected lines).
#![no_main]

use airlock_proxy::http::{
    error_response, forward_head, parse_request, BodyFraming, ProxyRequest, MAX_HEAD,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_request(data) {
        Ok(None) => assert!(data.len() < MAX_HEAD),
        Ok(Some((req, head_len))) => {
            assert!(head_len <= data.len() && head_len <= MAX_HEAD);
            // The same head alone parses to the same request.
            assert_eq!(
                parse_request(&data[..head_len]),
                Ok(Some((req.clone(), head_len)))
            );
            let head = forward_head(&req);
            match req {
                ProxyRequest::Connect { port, .. } => {
                    assert!(head.is_empty());
                    assert_ne!(port, 0);
                }
                ProxyRequest::Forward {
                    port,
                    ref path,
                    body,
                    ..
                } => {
                    assert_ne!(port, 0);
                    assert!(path.starts_with('/'));
                    check_upstream_head(&head, body);
                }
            }
        }
        Err(e) => {
            let status = e.status();
            assert!((400..=599).contains(&status));
            let response = error_response(status, &e.to_string());
            assert!(response.starts_with(b"HTTP/1.1 "));
        }
    }
});

/// One head: CRLF lines only, ending at the first empty line, exactly one Host and one
/// Connection header, and exactly the framing header the checked body framing calls for.
fn check_upstream_head(head: &[u8], body: BodyFraming) {
    assert!(head.ends_with(b"\r\n\r\n"));
    let end = head.windows(4).position(|w| w == b"\r\n\r\n");
    assert_eq!(end, Some(head.len() - 4));
    for (i, &b) in head.iter().enumerate() {
        match b {
            b'\n' => assert!(i > 0 && head[i - 1] == b'\r'),
            b'\r' => assert_eq!(head.get(i + 1), Some(&b'\n')),
            0 => panic!("NUL in upstream head"),
            _ => {}
        }
    }
    let lines: Vec<&[u8]> = head.split(|&b| b == b'\n').collect();
    let count = |prefix: &[u8]| {
        lines
            .iter()
            .filter(|l| l.len() >= prefix.len() && l[..prefix.len()].eq_ignore_ascii_case(prefix))
            .count()
    };
    assert_eq!(count(b"host:"), 1);
    assert_eq!(count(b"connection:"), 1);
    let (cl, te) = match body {
        BodyFraming::None => (0, 0),
        BodyFraming::Length(_) => (1, 0),
        BodyFraming::Chunked => (0, 1),
    };
    assert_eq!(count(b"content-length:"), cl);
    assert_eq!(count(b"transfer-encoding:"), te);
}
