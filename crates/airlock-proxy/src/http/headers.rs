//! Header lines, and the framing checks that keep the proxy and the upstream server from
//! reading a different body length (request smuggling).

use super::error::HttpError;
use super::request::{is_tchar, HttpVersion};

/// The most header lines accepted in one request head.
pub const MAX_HEADERS: usize = 100;

/// `name: value`. The name is a token directly followed by `:`; the value is trimmed of spaces
/// and tabs, must be UTF-8, and may not contain control characters (other than tab) or DEL.
pub(super) fn parse_header_line(line: &[u8]) -> Result<(String, String), HttpError> {
    if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return Err(HttpError::ObsFold);
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HttpError::Header("a header line has no colon"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::Header(
            "a header name is not a token (no spaces before the colon)",
        ));
    }
    let value = trim_ows(value);
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HttpError::Header(
            "a header value contains a control character",
        ));
    }
    let value =
        std::str::from_utf8(value).map_err(|_| HttpError::Header("a header value is not UTF-8"))?;
    let name =
        std::str::from_utf8(name).map_err(|_| HttpError::Header("a header name is not a token"))?;
    Ok((name.to_owned(), value.to_owned()))
}

fn trim_ows(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

/// The comma-separated elements of every header named `name`, trimmed.
pub(super) fn list_elements<'a>(
    headers: &'a [(String, String)],
    name: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(','))
        .map(|element| element.trim_matches([' ', '\t']))
}

/// How the body of a request is delimited, as the proxy forwards it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// Neither `Content-Length` nor `Transfer-Encoding`: no body (also for HTTP/1.0).
    None,
    /// `Content-Length: n`: exactly `n` bytes follow the head.
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`: chunks up to the last (zero-size) chunk and its
    /// trailer section.
    Chunked,
}

/// The body framing of a head, after refusing heads whose body length two implementations
/// could read differently: conflicting or malformed Content-Length, Transfer-Encoding together
/// with Content-Length, Transfer-Encoding in HTTP/1.0, or a Transfer-Encoding whose last coding
/// is not a single `chunked`.
pub(super) fn check_framing(
    headers: &[(String, String)],
    version: HttpVersion,
) -> Result<BodyFraming, HttpError> {
    let mut content_length = None;
    for element in list_elements(headers, "content-length") {
        if element.is_empty() || element.len() > 19 || !element.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(HttpError::Framing("Content-Length is not a decimal number"));
        }
        if content_length.is_some_and(|seen| seen != element) {
            return Err(HttpError::Framing("conflicting Content-Length values"));
        }
        content_length = Some(element);
    }

    let has_te = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"));
    if !has_te {
        return match content_length {
            // At most 19 decimal digits: always fits in a u64.
            Some(text) => text
                .parse()
                .map(BodyFraming::Length)
                .map_err(|_| HttpError::Framing("Content-Length is not a decimal number")),
            None => Ok(BodyFraming::None),
        };
    }
    if content_length.is_some() {
        return Err(HttpError::Framing(
            "both Transfer-Encoding and Content-Length are present",
        ));
    }
    if version == HttpVersion::Http10 {
        return Err(HttpError::Framing(
            "Transfer-Encoding is not allowed in an HTTP/1.0 request",
        ));
    }
    let codings: Vec<&str> = list_elements(headers, "transfer-encoding").collect();
    let chunked = codings
        .iter()
        .filter(|c| c.eq_ignore_ascii_case("chunked"))
        .count();
    let last_is_chunked = codings
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"));
    if codings.iter().any(|c| c.is_empty()) || chunked != 1 || !last_is_chunked {
        return Err(HttpError::Framing(
            "Transfer-Encoding must end with exactly one `chunked`",
        ));
    }
    Ok(BodyFraming::Chunked)
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
