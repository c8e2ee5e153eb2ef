//! Host names: the one normalisation every comparison goes through.

use std::net::IpAddr;

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

use super::error::{NameProblem, RuleError};
use crate::addr::{canonical, parse_ip_literal};

/// The longest DNS name in text form, without the trailing dot.
const MAX_NAME_LEN: usize = 253;
/// The longest DNS label.
const MAX_LABEL_LEN: usize = 63;

/// A destination host as written in a request or a rule, after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// An IP literal in any notation, in [`canonical`] form.
    Ip(IpAddr),
    /// A normalised DNS name (see [`normalize_host`]).
    Name(String),
}

/// Parses `text` as a host: an IP literal in any notation (including ones that only become a
/// literal after IDNA mapping, such as full-width digits) is [`Host::Ip`]; anything else must be
/// a valid name and is returned normalised as by [`normalize_host`].
pub fn parse_host(text: &str) -> Result<Host, RuleError> {
    if text.is_empty() {
        return Err(RuleError::EmptyName);
    }
    if let Some(ip) = parse_ip_literal(text) {
        return Ok(Host::Ip(canonical(ip)));
    }
    let invalid = |problem| RuleError::InvalidName {
        value: printable(text),
        problem,
    };
    // UTS #46 with no ASCII deny list: it lowercases, maps (full-width forms, ideographic full
    // stops, ...) and converts to punycode; the label checks below then say precisely what is
    // wrong with any remaining ASCII.
    let ascii = Uts46::new()
        .to_ascii(
            text.as_bytes(),
            AsciiDenyList::EMPTY,
            Hyphens::Allow,
            DnsLength::Ignore,
        )
        .map_err(|_| invalid(NameProblem::Idna))?;
    if let Some(ip) = parse_ip_literal(&ascii) {
        return Ok(Host::Ip(canonical(ip)));
    }
    let name = ascii.strip_suffix('.').unwrap_or(&ascii);
    if name.is_empty() {
        return Err(RuleError::EmptyName);
    }
    check_name(name).map_err(invalid)?;
    Ok(Host::Name(name.to_owned()))
}

/// Normalises a host name for comparison: lowercase, one trailing dot removed, IDNA (UTS #46)
/// to ASCII/punycode, and validated as a DNS name (labels of 1 to 63 letters, digits and inner
/// hyphens; at most 253 characters; a last label that is not a number). IP literals in any
/// notation are refused with [`RuleError::IpLiteral`].
pub fn normalize_host(name: &str) -> Result<String, RuleError> {
    match parse_host(name)? {
        Host::Name(name) => Ok(name),
        Host::Ip(ip) => Err(RuleError::IpLiteral {
            value: printable(name),
            ip,
        }),
    }
}

fn check_name(name: &str) -> Result<(), NameProblem> {
    if name.len() > MAX_NAME_LEN {
        return Err(NameProblem::TooLong { len: name.len() });
    }
    let mut last = "";
    for label in name.split('.') {
        if label.is_empty() {
            return Err(NameProblem::EmptyLabel);
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(NameProblem::LabelTooLong {
                label: label.to_owned(),
                len: label.len(),
            });
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(NameProblem::BadCharacter {
                label: printable(label),
            });
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(NameProblem::HyphenAtEdge {
                label: label.to_owned(),
            });
        }
        last = label;
    }
    // The URL standard treats a name whose last label is a number as an IPv4 address; refuse
    // such names rather than guess which reading a client or resolver applies.
    let hex = last.strip_prefix("0x").unwrap_or(last);
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Err(NameProblem::NumericLastLabel);
    }
    Ok(())
}

/// `text` with control, format and other unprintable characters escaped, so that messages
/// built from untrusted input stay on one line.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Letters of any script stay readable; controls, line breaks, bidi and other format
        // characters are escaped.
        if c.is_ascii_graphic() || c == ' ' || c.is_alphanumeric() {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
