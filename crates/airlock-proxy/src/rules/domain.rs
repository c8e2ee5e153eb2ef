//! `--allow-domain` / `--deny-domain` patterns: `name[:PORT]` or `*.name[:PORT]`.

use std::fmt;

use serde::Serialize;

use super::error::RuleError;
use super::host::{normalize_host, printable};
use crate::addr::{canonical, parse_ip_literal};

/// One domain rule. `name` alone matches exactly that name; `*.name` matches every subdomain of
/// `name` at any depth but not `name` itself. A pattern without a port matches every port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainPattern {
    /// The domain, normalised (see [`normalize_host`]).
    pub name: String,
    /// Whether the pattern was `*.name` (subdomains only).
    pub subdomains: bool,
    /// The only port the pattern matches; `None` matches every port.
    pub port: Option<u16>,
}

impl DomainPattern {
    /// Parses `name`, `*.name`, `name:PORT` or `*.name:PORT`. Refuses `*` alone, `*.`, a `*`
    /// anywhere but as the whole first label, a wildcard over a single-label suffix (`*.com`),
    /// IP addresses (use `--allow-ip`), invalid names and ports outside 1..=65535.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let value = printable(text);
        let literal = parse_ip_literal(text).or_else(|| {
            text.rsplit_once(':')
                .and_then(|(host, _)| parse_ip_literal(host))
        });
        if let Some(ip) = literal {
            return Err(RuleError::IpLiteral {
                value,
                ip: canonical(ip),
            });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(parse_port(text, port)?)),
            None => (text, None),
        };
        let bare = host.trim_end_matches('.');
        if bare == "*" {
            return Err(RuleError::BareWildcard { value });
        }
        let (name, subdomains) = match host.strip_prefix("*.") {
            Some(rest) if rest.contains('*') => return Err(RuleError::WildcardPlacement { value }),
            Some(rest) if rest.trim_end_matches('.').is_empty() => {
                return Err(RuleError::BareWildcard { value })
            }
            Some(rest) => {
                let name = normalize_host(rest)?;
                if !name.contains('.') {
                    return Err(RuleError::WildcardTooBroad {
                        value,
                        suffix: name,
                    });
                }
                (name, true)
            }
            None if host.contains('*') => return Err(RuleError::WildcardPlacement { value }),
            None => (normalize_host(host)?, false),
        };
        Ok(DomainPattern {
            name,
            subdomains,
            port,
        })
    }

    /// Whether the pattern matches `host` (already normalised with [`normalize_host`]) on
    /// `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.matches_name(host) && self.port.is_none_or(|p| p == port)
    }

    /// Whether the pattern matches `host` (normalised) on some port.
    pub fn matches_name(&self, host: &str) -> bool {
        if self.subdomains {
            host.strip_suffix(self.name.as_str())
                .and_then(|head| head.strip_suffix('.'))
                .is_some_and(|head| !head.is_empty())
        } else {
            host == self.name
        }
    }
}

/// As the user would write it: `*.example.com:443`.
impl fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subdomains {
            f.write_str("*.")?;
        }
        f.write_str(&self.name)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// Parses the `PORT` of `NAME:PORT`: decimal digits only, 1..=65535.
pub(crate) fn parse_port(value: &str, port: &str) -> Result<u16, RuleError> {
    let invalid = || RuleError::InvalidPort {
        value: printable(value),
        port: printable(port),
    };
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(invalid()),
        Ok(port) => Ok(port),
    }
}

#[cfg(test)]
#[path = "domain_tests.rs"]
mod tests;
