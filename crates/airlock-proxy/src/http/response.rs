//! The responses the proxy writes itself: tunnel established, denied, and errors.

/// The reply to a CONNECT request once the upstream connection is open.
pub const CONNECT_ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

/// The longest reason token and message written into a response.
const MAX_REASON: usize = 64;
const MAX_MESSAGE: usize = 1024;

/// `403 Forbidden` for a destination the policy refuses, with `X-Airlock-Denied: <reason>`.
/// `reason` is reduced to a kebab-case token (lowercase ASCII letters, digits and `-`, at most
/// 64 bytes, `denied` if nothing is left); `message` becomes the one-line body (control
/// characters replaced by spaces, at most 1024 bytes, then `\n`).
pub fn denied_response(reason: &str, message: &str) -> Vec<u8> {
    let reason = kebab_token(reason);
    response(403, Some(("X-Airlock-Denied", &reason)), message)
}

/// An error response of the same shape as [`denied_response`], without the denial header:
/// `Content-Type: text/plain`, `Content-Length`, `Connection: close`, one-line body.
/// A status outside 400..=599 is written as 500.
pub fn error_response(status: u16, message: &str) -> Vec<u8> {
    let status = if (400..=599).contains(&status) {
        status
    } else {
        500
    };
    response(status, None, message)
}

fn response(status: u16, extra: Option<(&str, &str)>, message: &str) -> Vec<u8> {
    let body = one_line(message);
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    if let Some((name, value)) = extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    head.into_bytes()
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        413 => "Content Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ if status < 500 => "Client Error",
        _ => "Server Error",
    }
}

fn kebab_token(reason: &str) -> String {
    let mut token = String::with_capacity(reason.len().min(MAX_REASON));
    for c in reason.chars().take(MAX_REASON) {
        let c = c.to_ascii_lowercase();
        token.push(if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        });
    }
    let token = token.trim_matches('-');
    if token.is_empty() {
        "denied".to_owned()
    } else {
        token.to_owned()
    }
}

/// The message on one line, control characters replaced, cut at a char boundary, plus `\n`.
fn one_line(message: &str) -> String {
    let mut line = String::with_capacity(message.len().min(MAX_MESSAGE) + 1);
    for c in message.chars() {
        if line.len() + c.len_utf8() > MAX_MESSAGE {
            break;
        }
        line.push(if c.is_control() { ' ' } else { c });
    }
    line.push('\n');
    line
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
