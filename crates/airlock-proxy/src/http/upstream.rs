//! The response head an upstream server sends back for a forwarded request, and the head the
//! proxy writes to the client in its place.
//!
//! The proxy answers one request per client connection. It rewrites only the hop-by-hop part of
//! the head (`Connection`, the headers it names, `Keep-Alive`, `Proxy-Connection`), always says
//! `Connection: close`, and works out where the response body ends, so that nothing the
//! upstream sends after its response reaches the client.

use super::headers::BodyFraming;
use super::request::{find_head_end, is_tchar, strip_cr, HttpVersion};

/// The largest response head accepted, terminating empty line included.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// The most header lines accepted in one response head.
pub const MAX_RESPONSE_HEADERS: usize = 256;

/// Hop-by-hop headers of a response, never passed to the client.
const DROPPED: &[&str] = &["connection", "keep-alive", "proxy-connection"];

/// A response head the proxy refuses to pass on (the client gets a 502).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The head did not end within [`MAX_RESPONSE_HEAD`] bytes.
    #[error("the upstream response head is larger than {MAX_RESPONSE_HEAD} bytes")]
    HeadTooLarge,
    /// More than [`MAX_RESPONSE_HEADERS`] header lines.
    #[error("the upstream response has more than {MAX_RESPONSE_HEADERS} header lines")]
    TooManyHeaders,
    /// A CR not followed by LF in the head.
    #[error("the upstream response head contains a carriage return that does not end a line")]
    BareCarriageReturn,
    /// Not `HTTP/1.x SP 3DIGIT [SP reason]`.
    #[error("the upstream did not answer with an HTTP/1.x status line")]
    StatusLine,
    /// A malformed or folded header line.
    #[error("the upstream response has a malformed or folded header line")]
    Header,
    /// A Content-Length that is not one decimal number.
    #[error("the upstream response has an invalid or conflicting Content-Length")]
    ContentLength,
    /// `101 Switching Protocols`, although the proxy never forwards `Upgrade`.
    #[error("the upstream switched protocols, which the proxy never asked for")]
    SwitchingProtocols,
}

/// Where the body of a final response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseBody {
    /// A framed body: nothing (`None`), `Length(n)` bytes, or chunks.
    Framed(BodyFraming),
    /// The body is everything until the upstream closes the connection.
    UntilClose,
}

/// One response head from the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamHead {
    /// The status code; `100..=199` is an interim response, another head follows it.
    pub status: u16,
    /// The head to write to the client: the upstream's status line and headers minus the
    /// hop-by-hop ones, one canonical `Content-Length` if it had any, and `Connection: close`
    /// on a final response. CRLF line ends. Empty for an interim response to an HTTP/1.0
    /// client, which must not get one.
    pub client_head: Vec<u8>,
    /// For a final response, where its body ends; `Framed(None)` for an interim one.
    pub body: ResponseBody,
}

impl UpstreamHead {
    /// Whether this is an interim (1xx) response.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status)
    }
}

/// What the response answers: a `HEAD` request (its response has no body), and the client's
/// HTTP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answering {
    pub head_request: bool,
    pub version: HttpVersion,
}

/// Parses one response head from the start of `buf`: `Ok(None)` if it is incomplete (and
/// shorter than [`MAX_RESPONSE_HEAD`]), else the head and its length in `buf`.
pub fn parse_response_head(
    buf: &[u8],
    answering: Answering,
) -> Result<Option<(UpstreamHead, usize)>, UpstreamError> {
    let window = &buf[..buf.len().min(MAX_RESPONSE_HEAD)];
    let head_len = match find_head_end(window) {
        Ok(Some(n)) => n,
        Ok(None) if buf.len() >= MAX_RESPONSE_HEAD => return Err(UpstreamError::HeadTooLarge),
        Ok(None) => return Ok(None),
        Err(_) => return Err(UpstreamError::BareCarriageReturn),
    };
    let mut lines = window[..head_len].split(|&b| b == b'\n').map(strip_cr);
    let status_line = lines.next().unwrap_or_default();
    let status = parse_status_line(status_line)?;
    if status == 101 {
        return Err(UpstreamError::SwitchingProtocols);
    }
    let mut headers = Vec::new();
    for line in lines.take_while(|line| !line.is_empty()) {
        if headers.len() == MAX_RESPONSE_HEADERS {
            return Err(UpstreamError::TooManyHeaders);
        }
        headers.push(parse_field(line)?);
    }

    let interim = (100..200).contains(&status);
    let connection_named: Vec<String> = elements(&headers, "connection")
        .map(|t| t.to_ascii_lowercase())
        .filter(|t| t != "content-length" && t != "transfer-encoding")
        .collect();
    let content_length = content_length(&headers)?;
    let codings: Vec<String> = elements(&headers, "transfer-encoding").collect();
    let chunked = codings
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"));

    let mut out = Vec::with_capacity(head_len + 32);
    out.extend_from_slice(status_line);
    out.extend_from_slice(b"\r\n");
    for (name, value) in &headers {
        let lower = name.to_ascii_lowercase();
        let hop = DROPPED.contains(&lower.as_str()) || connection_named.contains(&lower);
        // Content-Length is written once below; with Transfer-Encoding it is dropped (RFC 9112
        // section 6.3: the coding wins and the length must not be forwarded).
        if hop || lower == "content-length" {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if let (Some(n), true) = (content_length, codings.is_empty()) {
        out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
    }
    if !interim {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if interim && answering.version == HttpVersion::Http10 {
        // HTTP/1.0 has no 1xx responses: an HTTP/1.0 client never gets one (RFC 9110 15.2).
        out.clear();
    }

    let no_body = interim || answering.head_request || status == 204 || status == 304;
    let body = if no_body {
        ResponseBody::Framed(BodyFraming::None)
    } else if !codings.is_empty() {
        // A coding list that does not end in chunked is delimited by the close (RFC 9112 6.3).
        if chunked {
            ResponseBody::Framed(BodyFraming::Chunked)
        } else {
            ResponseBody::UntilClose
        }
    } else {
        match content_length {
            Some(n) => ResponseBody::Framed(BodyFraming::Length(n)),
            None => ResponseBody::UntilClose,
        }
    };
    Ok(Some((
        UpstreamHead {
            status,
            client_head: out,
            body,
        },
        head_len,
    )))
}

/// `HTTP/1.x SP 3DIGIT [SP reason]`: the status code.
fn parse_status_line(line: &[u8]) -> Result<u16, UpstreamError> {
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor, b' ', d1, d2, d3, rest @ ..] = line
    else {
        return Err(UpstreamError::StatusLine);
    };
    if !minor.is_ascii_digit() || ![d1, d2, d3].iter().all(|d| d.is_ascii_digit()) {
        return Err(UpstreamError::StatusLine);
    }
    if !(rest.is_empty() || rest[0] == b' ') || rest.iter().any(|&b| is_ctl(b)) {
        return Err(UpstreamError::StatusLine);
    }
    let status = u16::from(d1 - b'0') * 100 + u16::from(d2 - b'0') * 10 + u16::from(d3 - b'0');
    if status < 100 {
        return Err(UpstreamError::StatusLine);
    }
    Ok(status)
}

fn is_ctl(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// `name: value` with the value kept as bytes (obs-text is allowed in responses).
fn parse_field(line: &[u8]) -> Result<(String, Vec<u8>), UpstreamError> {
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(UpstreamError::Header)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        // Also refuses obs-fold, whose line starts with whitespace.
        return Err(UpstreamError::Header);
    }
    let start = value.iter().position(|&b| b != b' ' && b != b'\t');
    let end = value.iter().rposition(|&b| b != b' ' && b != b'\t');
    let value = match (start, end) {
        (Some(s), Some(e)) => &value[s..=e],
        _ => &[][..],
    };
    if value.iter().any(|&b| is_ctl(b)) {
        return Err(UpstreamError::Header);
    }
    // A token is ASCII, so this never fails.
    let name = String::from_utf8(name.to_vec()).map_err(|_| UpstreamError::Header)?;
    Ok((name, value.to_vec()))
}

/// The comma-separated elements of every header named `name`, trimmed, as text.
fn elements<'a>(
    headers: &'a [(String, Vec<u8>)],
    name: &'a str,
) -> impl Iterator<Item = String> + 'a {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(|e| {
            String::from_utf8_lossy(e)
                .trim_matches([' ', '\t'])
                .to_owned()
        })
}

/// The one Content-Length value, if any; refuses malformed or conflicting values.
fn content_length(headers: &[(String, Vec<u8>)]) -> Result<Option<u64>, UpstreamError> {
    let mut length = None;
    for element in elements(headers, "content-length") {
        if element.is_empty() || element.len() > 19 || !element.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(UpstreamError::ContentLength);
        }
        let n: u64 = element.parse().map_err(|_| UpstreamError::ContentLength)?;
        if length.is_some_and(|seen| seen != n) {
            return Err(UpstreamError::ContentLength);
        }
        length = Some(n);
    }
    Ok(length)
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
