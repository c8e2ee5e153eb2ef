//! The request head the proxy sends upstream for a forwarded (absolute-URI) request.

use super::headers::{list_elements, BodyFraming};
use super::request::ProxyRequest;

/// Hop-by-hop and proxy headers, never forwarded. `Host` is replaced by the URI authority.
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
];

/// Framing headers: never copied from the client, never removed by `Connection`. The proxy
/// writes them itself from the checked framing, once, in canonical form.
const FRAMING: &[&str] = &["content-length", "transfer-encoding"];

/// The head to send upstream for a `Forward` request: the origin-form request line with the
/// client's method and version, `Host` set to the URI authority (any client `Host` is dropped),
/// the client's headers minus hop-by-hop and proxy headers (`Connection` and the headers it
/// names, `Proxy-*`, `Keep-Alive`, `TE`, `Trailer`, `Upgrade`), then the body framing written
/// once from the checked request (`Content-Length: n`, or `Transfer-Encoding` with the
/// client's codings; nothing for a request without body), then `Connection: close`.
///
/// For a `Connect` request there is no upstream head: the result is empty.
/// `req` is expected to come from [`super::parse_request`]; as a last line of defence, header
/// lines that would not pass its checks (CR, LF or other control characters) are skipped.
pub fn forward_head(req: &ProxyRequest) -> Vec<u8> {
    let ProxyRequest::Forward {
        method,
        host,
        port,
        path,
        version,
        headers,
        body,
    } = req
    else {
        return Vec::new();
    };
    let named_by_connection: Vec<&str> = list_elements(headers, "connection")
        .filter(|token| !FRAMING.iter().any(|f| token.eq_ignore_ascii_case(f)))
        .collect();
    let dropped = |name: &str| {
        DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d))
            || FRAMING.iter().any(|f| name.eq_ignore_ascii_case(f))
            || named_by_connection
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
    };

    let mut out = Vec::with_capacity(256);
    push_line(&mut out, &[method, " ", path, " ", version.as_str()]);
    let host_value = match (host.contains(':'), *port) {
        (true, 80) => format!("[{host}]"),
        (true, port) => format!("[{host}]:{port}"),
        (false, 80) => host.clone(),
        (false, port) => format!("{host}:{port}"),
    };
    push_line(&mut out, &["Host: ", &host_value]);
    for (name, value) in headers {
        if !dropped(name) && is_header_safe(name) && is_header_safe(value) {
            push_line(&mut out, &[name, ": ", value]);
        }
    }
    match body {
        BodyFraming::None => {}
        BodyFraming::Length(n) => push_line(&mut out, &["Content-Length: ", &n.to_string()]),
        BodyFraming::Chunked => {
            let codings: Vec<&str> = list_elements(headers, "transfer-encoding").collect();
            let codings = codings.join(", ");
            if is_header_safe(&codings) {
                push_line(&mut out, &["Transfer-Encoding: ", &codings]);
            } else {
                push_line(&mut out, &["Transfer-Encoding: chunked"]);
            }
        }
    }
    push_line(&mut out, &["Connection: close"]);
    out.extend_from_slice(b"\r\n");
    out
}

fn push_line(out: &mut Vec<u8>, parts: &[&str]) {
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

fn is_header_safe(text: &str) -> bool {
    !text.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
}

#[cfg(test)]
#[path = "forward_tests.rs"]
mod tests;
