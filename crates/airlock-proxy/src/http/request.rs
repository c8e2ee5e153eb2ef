//! The request head: where it ends, the request line, and the two kinds of proxy request.

use super::authority::{parse_absolute_uri, parse_connect_target};
use super::error::HttpError;
use super::headers::{check_framing, parse_header_line, BodyFraming};

/// The largest request head accepted, terminating empty line included.
pub const MAX_HEAD: usize = 16 * 1024;

/// One proxy request, as read from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyRequest {
    /// `CONNECT host:port HTTP/1.x`. `host` is a DNS name or IPv4 literal exactly as written
    /// (ASCII, validated), or an IPv6 literal without brackets in canonical form.
    Connect { host: String, port: u16 },
    /// An absolute-URI request such as `GET http://host:port/path?q HTTP/1.1`, `http` scheme
    /// only. `host` as for `Connect`; `port` defaults to 80; `path` is the origin-form target
    /// (always starts with `/`, query included); `headers` are all header lines in order, names
    /// and values as sent (values trimmed of surrounding whitespace); `body` is how the body
    /// after the head is delimited (checked: no ambiguous framing). Nothing after that body
    /// belongs to this request.
    Forward {
        method: String,
        host: String,
        port: u16,
        path: String,
        version: HttpVersion,
        headers: Vec<(String, String)>,
        body: BodyFraming,
    },
}

/// The HTTP version of the request line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    Http10,
    Http11,
}

impl HttpVersion {
    /// The version as written on a request line, e.g. `HTTP/1.1`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http10 => "HTTP/1.0",
            HttpVersion::Http11 => "HTTP/1.1",
        }
    }
}

/// Parses one request head from the start of `buf`.
///
/// - `Ok(None)`: the head is incomplete and `buf` is shorter than [`MAX_HEAD`]: read more.
/// - `Ok(Some((request, head_len)))`: the head is `buf[..head_len]` (`head_len <= MAX_HEAD`);
///   the bytes after it are the start of the tunnel (`Connect`), or the body framed as the
///   request's `body` says, and after that bytes that are not part of this request (`Forward`).
/// - `Err(e)`: refuse with `e.status()`. An error found in a prefix of the head is the error the
///   whole head would get.
///
/// Lines end with CRLF; a bare LF is tolerated as a line end (as most servers do), a bare CR
/// anywhere is refused.
pub fn parse_request(buf: &[u8]) -> Result<Option<(ProxyRequest, usize)>, HttpError> {
    let window = &buf[..buf.len().min(MAX_HEAD)];
    let Some(head_len) = find_head_end(window)? else {
        return if buf.len() >= MAX_HEAD {
            Err(HttpError::HeadTooLarge)
        } else {
            Ok(None)
        };
    };
    let mut lines = window[..head_len].split(|&b| b == b'\n').map(strip_cr);
    let request_line = lines.next().unwrap_or_default();
    let (method, target, version) = parse_request_line(request_line)?;

    let mut headers = Vec::new();
    for line in lines.take_while(|line| !line.is_empty()) {
        if headers.len() == super::MAX_HEADERS {
            return Err(HttpError::TooManyHeaders);
        }
        headers.push(parse_header_line(line)?);
    }
    let body = check_framing(&headers, version)?;

    let request = if method == "CONNECT" {
        let (host, port) = parse_connect_target(target)?;
        ProxyRequest::Connect { host, port }
    } else {
        let (host, port, path) = parse_absolute_uri(target)?;
        ProxyRequest::Forward {
            method: method.to_owned(),
            host,
            port,
            path,
            version,
            headers,
            body,
        }
    };
    Ok(Some((request, head_len)))
}

/// The length of the head up to and including its terminating empty line, if `buf` holds it.
/// Refuses a CR not followed by LF (a CR as the last byte may still be completed).
pub(super) fn find_head_end(buf: &[u8]) -> Result<Option<usize>, HttpError> {
    let mut line_start = 0;
    for (i, &b) in buf.iter().enumerate() {
        match b {
            b'\r' if buf.get(i + 1).is_some_and(|&next| next != b'\n') => {
                return Err(HttpError::BareCarriageReturn);
            }
            b'\n' => {
                if strip_cr(&buf[line_start..i]).is_empty() {
                    return Ok(Some(i + 1));
                }
                line_start = i + 1;
            }
            _ => {}
        }
    }
    Ok(None)
}

pub(super) fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `METHOD SP target SP HTTP/1.x`, exactly one space between the parts.
fn parse_request_line(line: &[u8]) -> Result<(&str, &str, HttpVersion), HttpError> {
    if line.is_empty() {
        return Err(HttpError::RequestLine(
            "the request starts with an empty line",
        ));
    }
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::RequestLine(
            "expected `METHOD target HTTP/1.1` separated by single spaces",
        ));
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::RequestLine("the method is not a token"));
    }
    if target.is_empty() {
        return Err(HttpError::RequestLine("empty request target"));
    }
    if !target.iter().all(|&b| b.is_ascii_graphic()) {
        return Err(HttpError::Target(
            "only visible ASCII characters are allowed (percent-encode the rest)",
        ));
    }
    let version = match version {
        b"HTTP/1.1" => HttpVersion::Http11,
        b"HTTP/1.0" => HttpVersion::Http10,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(HttpError::UnsupportedVersion)
        }
        _ => return Err(HttpError::RequestLine("the version is not HTTP/1.x")),
    };
    // Both checked to be ASCII above, so these conversions cannot fail.
    let method = std::str::from_utf8(method)
        .map_err(|_| HttpError::RequestLine("the method is not a token"))?;
    let target = std::str::from_utf8(target)
        .map_err(|_| HttpError::Target("only visible ASCII characters are allowed"))?;
    Ok((method, target, version))
}

/// RFC 9110 `tchar`: the characters of a token (methods, header names).
pub(super) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
