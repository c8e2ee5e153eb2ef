//! One intercepted request: its authority must be the host the box connected to, no other
//! secret's placeholder may ride along, and each bound secret's placeholder is replaced by
//! its value (in headers; in the body where the binding says so).

use crate::rules::normalize_host;
use crate::secrets::{find_leak, BoxSecrets, Leak};
use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_LENGTH, HOST};
use hyper::http::request::Parts;
use hyper::Uri;

/// Largest body rewritten in memory (a binding with `body = true`); larger ones are refused.
pub(crate) const MAX_REWRITTEN_BODY: usize = 1 << 20;

/// Headers that belong to one connection and are not forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// Why a request was refused before it was forwarded.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The request names another host than the connection's (421).
    Misdirected(String),
    /// Another secret's placeholder or value (403).
    Leak(Leak),
    /// A body too large to rewrite (413).
    BodyTooLarge,
}

/// The request's authority (`host[:port]`): the URI's (HTTP/2, absolute form) or the Host
/// header.
fn authority(parts: &Parts) -> Option<String> {
    if let Some(a) = parts.uri.authority() {
        return Some(a.as_str().to_string());
    }
    parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
}

/// Checks that the request is for `host` (normalised) on `port`; an absent port means 443.
pub(crate) fn check_authority(parts: &Parts, host: &str, port: u16) -> Result<(), Refusal> {
    let Some(auth) = authority(parts) else {
        return Err(Refusal::Misdirected(
            "the request names no host (no :authority or Host header)".into(),
        ));
    };
    let (name, p) = match auth.rsplit_once(':') {
        Some((n, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() => {
            (n.to_string(), p.parse::<u16>().ok())
        }
        _ => (auth.clone(), Some(443)),
    };
    let same = normalize_host(&name).is_ok_and(|n| n == host) && p == Some(port);
    if same {
        Ok(())
    } else {
        Err(Refusal::Misdirected(format!(
            "the request is for {auth} but the connection is to {host}:{port}; the proxy sends a connection's requests to its own host only"
        )))
    }
}

/// Blocks the request if any secret not bound to `host:port` is in its URI or headers.
pub(crate) fn check_head(
    parts: &Parts,
    secrets: &BoxSecrets,
    host: &str,
    port: u16,
) -> Result<(), Refusal> {
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(parts.uri.to_string().as_bytes());
    for (name, value) in &parts.headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.push(b'\n');
        head.extend_from_slice(value.as_bytes());
        head.push(b'\n');
    }
    match find_leak(secrets, &head, host, port) {
        Some(leak) => Err(Refusal::Leak(leak)),
        None => Ok(()),
    }
}

/// Sets the headers the secrets bound to `host:port` set there (E2B's network rules), replacing
/// any of the same name the box sent. Of several rule hosts that match, only the most specific
/// one's headers are set (an exact name, else the longest wildcard suffix; rule sets are not
/// merged, as E2B does). Their values hold placeholders, which [`rewrite_head`] then replaces.
pub(crate) fn set_headers(parts: &mut Parts, secrets: &BoxSecrets, host: &str, port: u16) {
    let matching = || {
        secrets
            .bound(host, port)
            .flat_map(|s| s.set_headers.iter())
            .filter(|h| h.host.matches(host, port))
    };
    let specificity = |h: &crate::secrets::SetHeader| (!h.host.subdomains, h.host.name.len());
    let Some(best) = matching().map(specificity).max() else {
        return;
    };
    for h in matching().filter(|h| specificity(h) == best) {
        parts.headers.insert(h.name.clone(), h.value.clone());
    }
}

/// Replaces every bound secret's placeholder in the header values (and in the URI's query,
/// where some APIs take their key). Returns the names of the secrets used.
pub(crate) fn rewrite_head(
    parts: &mut Parts,
    secrets: &BoxSecrets,
    host: &str,
    port: u16,
) -> Vec<String> {
    let mut used = Vec::new();
    for secret in secrets.bound(host, port) {
        let needle = secret.placeholder.as_bytes();
        let mut hit = false;
        for value in parts.headers.values_mut() {
            if let Some(new) = replace(value.as_bytes(), needle, secret.value()) {
                if let Ok(v) = HeaderValue::from_bytes(&new) {
                    *value = v;
                    hit = true;
                }
            }
        }
        let uri = parts.uri.to_string();
        if let Some(new) = replace(uri.as_bytes(), needle, secret.value()) {
            if let Ok(u) = Uri::try_from(new) {
                parts.uri = u;
                hit = true;
            }
        }
        if hit {
            used.push(secret.name.clone());
        }
    }
    used
}

/// Rewrites a whole body for the bound secrets with `body = true`, and blocks it if another
/// secret is in it. Returns the new body and the names used.
pub(crate) fn rewrite_body(
    body: Bytes,
    secrets: &BoxSecrets,
    host: &str,
    port: u16,
) -> Result<(Bytes, Vec<String>), Refusal> {
    if let Some(leak) = find_leak(secrets, &body, host, port) {
        return Err(Refusal::Leak(leak));
    }
    let mut data = body.to_vec();
    let mut used = Vec::new();
    for secret in secrets.bound(host, port).filter(|s| s.body) {
        if let Some(new) = replace(&data, secret.placeholder.as_bytes(), secret.value()) {
            data = new;
            used.push(secret.name.clone());
        }
    }
    Ok((Bytes::from(data), used))
}

/// Whether some secret bound to `host:port` asks for its body to be rewritten.
pub(crate) fn wants_body(secrets: &BoxSecrets, host: &str, port: u16) -> bool {
    secrets.bound(host, port).any(|s| s.body)
}

/// Fixes the request for the upstream protocol: HTTP/2 takes the absolute URI and no
/// connection headers; HTTP/1.1 takes the origin form and a Host header.
pub(crate) fn for_upstream(parts: &mut Parts, host: &str, port: u16, h2: bool) {
    for name in HOP_BY_HOP {
        parts.headers.remove(*name);
    }
    let authority = if port == 443 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if h2 {
        parts.headers.remove(HOST);
        if let Ok(u) = Uri::try_from(format!("https://{authority}{path}")) {
            parts.uri = u;
        }
        parts.version = hyper::Version::HTTP_2;
    } else {
        if !parts.headers.contains_key(HOST) {
            if let Ok(v) = HeaderValue::from_str(&authority) {
                parts.headers.insert(HOST, v);
            }
        }
        if let Ok(u) = Uri::try_from(path) {
            parts.uri = u;
        }
        parts.version = hyper::Version::HTTP_11;
    }
}

/// Sets Content-Length after a body rewrite.
pub(crate) fn set_length(parts: &mut Parts, len: usize) {
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
}

/// `hay` with every `needle` replaced by `with`, or `None` when it does not occur.
fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    if needle.is_empty() || !crate::secrets::contains_bytes(hay, needle) {
        return None;
    }
    let mut out = Vec::with_capacity(hay.len() + with.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
