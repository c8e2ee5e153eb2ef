//! What the terminal approver shows and which keys it takes: pure text, tested without a
//! terminal.

use super::super::request::ApprovalRequest;
use std::path::Path;

/// A key pressed at the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `o`: allow this connection.
    Once,
    /// `r`: allow it, and the same destination until the box ends.
    Run,
    /// `s`: as `r`, and write the grant into the policy file.
    Save,
    /// `d`, `n`, Ctrl-C, Ctrl-D: refuse.
    Deny,
    /// Anything else: the question stays.
    Other,
}

/// The key a byte read from the terminal is.
pub fn key(byte: u8) -> Key {
    match byte {
        b'o' | b'O' => Key::Once,
        b'r' | b'R' => Key::Run,
        b's' | b'S' => Key::Save,
        b'd' | b'D' | b'n' | b'N' | 0x03 | 0x04 => Key::Deny,
        _ => Key::Other,
    }
}

/// `text` with every control character (escape sequences included) and anything else that is
/// not printable replaced by `?`: nothing the box influenced can move the cursor or recolour
/// the question.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The question for `request`, in lines ending with CRLF (the terminal may be in raw mode),
/// starting on a fresh line. `save_to`: the policy file `s` writes into, if there is one.
pub fn question(request: &ApprovalRequest, save_to: Option<&Path>, seconds_left: u64) -> String {
    let mut out = String::from("\r\n");
    out.push_str(&format!(
        "[airlock] approval #{}: the box asks to connect to {}:{} ({})\r\n",
        request.id,
        printable(&request.host),
        request.port,
        printable(&request.protocol)
    ));
    if let Some(who) = &request.process {
        out.push_str(&format!(
            "[airlock]   by the box's process (as the box names it): {}\r\n",
            printable(who)
        ));
    }
    out.push_str(&format!(
        "[airlock]   refused by the policy: {}\r\n",
        printable(&request.message)
    ));
    if let Some(rule) = &request.rule {
        out.push_str(&format!("[airlock]   rule: {}\r\n", printable(rule)));
    }
    let save = match save_to {
        Some(p) => format!(
            "[s] allow and save to {}",
            printable(&p.display().to_string())
        ),
        None => "([s] save: no --policy file)".to_string(),
    };
    out.push_str(&format!(
        "[airlock]   grant {}? [o] allow once  [r] allow for this run  {save}  [d] deny  (deny in {seconds_left} s) ",
        printable(&request.grant)
    ));
    out
}

/// The line after the question was answered (or not).
pub fn outcome(text: &str) -> String {
    format!("{}\r\n", printable(text))
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
