//! Request targets and their authority (`host[:port]`), read the way a client connects.
//!
//! Hosts are returned as a DNS name or IPv4 literal exactly as written (ASCII letters, digits,
//! `-`, `.`, `_` only; other IPv4 notations such as `127.1` pass through as names for the
//! decision layer to recognise), or an IPv6 literal in canonical form without brackets.

use std::net::Ipv6Addr;

use super::error::HttpError;

/// The longest host name accepted (a DNS name, plus one byte for a trailing dot).
const MAX_HOST: usize = 254;

/// The authority-form target of a CONNECT request: `host:port`, port required.
pub(super) fn parse_connect_target(target: &str) -> Result<(String, u16), HttpError> {
    if target.contains('/') {
        return Err(HttpError::Target("a CONNECT target must be `host:port`"));
    }
    parse_authority(target, None)
}

/// An absolute-form target `http://authority[/path][?query]`: the host, the port (default 80)
/// and the origin-form path (at least `/`).
pub(super) fn parse_absolute_uri(target: &str) -> Result<(String, u16, String), HttpError> {
    if target.starts_with('/') || target == "*" {
        return Err(HttpError::NotProxyRequest);
    }
    let Some((scheme, rest)) = target.split_once("://") else {
        return Err(HttpError::NotProxyRequest);
    };
    if !is_scheme(scheme) {
        return Err(HttpError::Target("the URI scheme is malformed"));
    }
    if scheme.eq_ignore_ascii_case("https") {
        return Err(HttpError::HttpsNeedsConnect);
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(HttpError::UnsupportedScheme);
    }
    if target.contains('#') {
        return Err(HttpError::Target(
            "a request target may not contain a fragment",
        ));
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let (host, port) = parse_authority(authority, Some(80))?;
    let path = match path.as_bytes().first() {
        None => "/".to_owned(),
        Some(b'?') => format!("/{path}"),
        Some(_) => path.to_owned(),
    };
    Ok((host, port, path))
}

fn is_scheme(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
}

/// `host[:port]` where host is a name, an IPv4 literal or a bracketed IPv6 literal. Without a
/// port, `default_port` applies; `None` makes the port required.
pub(super) fn parse_authority(
    authority: &str,
    default_port: Option<u16>,
) -> Result<(String, u16), HttpError> {
    if authority.contains('@') {
        return Err(HttpError::Userinfo);
    }
    if authority.is_empty() {
        return Err(HttpError::Authority("the host is empty"));
    }
    let (host, port_text) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (literal, after) = bracketed
            .split_once(']')
            .ok_or(HttpError::Authority("an IPv6 literal has no closing `]`"))?;
        let port_text = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or(HttpError::Authority(
                "unexpected characters after an IPv6 literal",
            ))?),
        };
        (parse_ipv6(literal)?, port_text)
    } else {
        let (host, port_text) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        if port_text.is_some_and(|p| p.contains(':')) {
            return Err(HttpError::Authority(
                "an IPv6 literal must be written in brackets",
            ));
        }
        check_host_name(host)?;
        (host.to_owned(), port_text)
    };
    let port = match (port_text, default_port) {
        (Some(text), _) => parse_port(text)?,
        (None, Some(default)) => default,
        (None, None) => return Err(HttpError::Authority("the port is missing")),
    };
    Ok((host, port))
}

fn parse_ipv6(literal: &str) -> Result<String, HttpError> {
    if literal.contains('%') {
        return Err(HttpError::Authority(
            "IPv6 zone identifiers and percent-encoding are refused",
        ));
    }
    literal
        .parse::<Ipv6Addr>()
        .map(|addr| addr.to_string())
        .map_err(|_| HttpError::Authority("the bracketed host is not an IPv6 address"))
}

fn check_host_name(host: &str) -> Result<(), HttpError> {
    if host.is_empty() {
        return Err(HttpError::Authority("the host is empty"));
    }
    if host.contains('%') {
        return Err(HttpError::Authority("percent-encoded hosts are refused"));
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
    {
        return Err(HttpError::Authority(
            "the host may only contain ASCII letters, digits, `-`, `.` and `_` (use punycode for international names)",
        ));
    }
    if host.len() > MAX_HOST {
        return Err(HttpError::Authority("the host name is too long"));
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name
        .split('.')
        .any(|label| label.is_empty() || label.len() > 63)
    {
        return Err(HttpError::Authority(
            "the host has an empty label or a label longer than 63 bytes",
        ));
    }
    Ok(())
}

/// 1 to 5 ASCII digits, value 1..=65535.
fn parse_port(text: &str) -> Result<u16, HttpError> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::Authority(
            "the port must be a number from 1 to 65535",
        ));
    }
    match text.parse::<u32>() {
        Ok(port @ 1..=65535) => u16::try_from(port)
            .map_err(|_| HttpError::Authority("the port must be a number from 1 to 65535")),
        _ => Err(HttpError::Authority(
            "the port must be a number from 1 to 65535",
        )),
    }
}

#[cfg(test)]
#[path = "authority_tests.rs"]
mod tests;
