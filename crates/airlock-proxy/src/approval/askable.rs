//! Which refusals may be asked about, and the grant that would allow one.
//!
//! Deny wins still: a destination a `--deny-domain` refuses, a malformed one, one that does not
//! resolve, and any private, loopback, link-local (metadata) or other non-public address, or
//! this host's own, is never askable. Only "not in the allowlist" (or "allowed on other ports
//! only") for a name, or for a public IP literal, is. A grant widens the rules by exactly
//! itself, and the whole decision runs again under the widened rules, so a granted name that
//! resolves to a non-public address is still refused.

use super::error::ApprovalError;
use crate::addr::{canonical, classify};
use crate::decision::{DenyReason, EgressDecision};
use crate::rules::{normalize_host, parse_host, DomainPattern, EgressRules, Host, IpGrant};
use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// What an approval grants: one host name on one port, or an address range (optionally on one
/// port) for IP-literal destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantTarget {
    /// `NAME:PORT`: exactly this normalised name (no wildcard) on this port.
    Host { name: String, port: u16 },
    /// `CIDR[:PORT]`: IP-literal destinations in the range.
    Range(IpGrant),
}

impl GrantTarget {
    /// Parses `NAME:PORT`, `IP[:PORT]`, `CIDR[:PORT]` or `[IPv6]:PORT`.
    pub fn parse(text: &str) -> Result<GrantTarget, ApprovalError> {
        let bad = |problem: String| ApprovalError::BadGrant {
            grant: crate::rules::printable(text),
            problem,
        };
        if let Ok(range) = IpGrant::parse(text) {
            return Ok(GrantTarget::Range(range));
        }
        let (name, port) = text
            .rsplit_once(':')
            .ok_or_else(|| bad("a host grant names its port (NAME:PORT)".into()))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad(format!("`{port}` is not a port between 1 and 65535")))?;
        let name = normalize_host(name).map_err(|e| bad(e.to_string()))?;
        Ok(GrantTarget::Host { name, port })
    }

    /// Whether the grant covers a request for `host` (parsed) on `port`.
    pub fn covers(&self, host: &Host, port: u16) -> bool {
        match (self, host) {
            (GrantTarget::Host { name, port: p }, Host::Name(n)) => name == n && *p == port,
            (GrantTarget::Range(range), Host::Ip(ip)) => range.matches(*ip, port),
            _ => false,
        }
    }

    /// `rules` widened by exactly this grant.
    pub fn widen(&self, rules: &EgressRules) -> EgressRules {
        let mut widened = rules.clone();
        match self {
            GrantTarget::Host { name, port } => {
                // A normalised name and a port always make a valid pattern.
                if let Ok(p) = DomainPattern::parse(&format!("{name}:{port}")) {
                    widened.allow_domains.push(p);
                }
            }
            GrantTarget::Range(range) => widened.allow_ips.push(range.clone()),
        }
        widened
    }
}

/// As an answer writes it: `svc.example:443`, `203.0.113.7:443`, `203.0.113.0/24`.
impl fmt::Display for GrantTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantTarget::Host { name, port } => write!(f, "{name}:{port}"),
            GrantTarget::Range(range) => write!(f, "{range}"),
        }
    }
}

/// The narrowest grant that could allow a refused request, or `None` if the refusal may not be
/// asked about (see the module's rules). `host_own` are this host's own addresses.
pub fn askable(refusal: &EgressDecision, host_own: &[IpAddr]) -> Option<GrantTarget> {
    let EgressDecision::Deny {
        host, port, reason, ..
    } = refusal
    else {
        return None;
    };
    let literal = |ip: IpAddr| {
        let ip = canonical(ip);
        let own = host_own.iter().any(|&o| canonical(o) == ip);
        (classify(ip).is_public() && !own).then(|| {
            GrantTarget::Range(IpGrant {
                net: IpNet::from(ip),
                port: Some(*port),
            })
        })
    };
    match reason {
        DenyReason::NotAllowed | DenyReason::PortNotAllowed | DenyReason::IpLiteralNotGranted => {
            match parse_host(host).ok()? {
                Host::Name(name) if *reason != DenyReason::IpLiteralNotGranted => {
                    Some(GrantTarget::Host { name, port: *port })
                }
                Host::Name(_) => None,
                Host::Ip(ip) => literal(ip),
            }
        }
        DenyReason::BadHost
        | DenyReason::DeniedDomain
        | DenyReason::DeniedAddress
        | DenyReason::ForbiddenAddress
        | DenyReason::ResolveFailed => None,
    }
}

#[cfg(test)]
#[path = "askable_tests.rs"]
mod tests;
