//! `--allow-ip` grants: `CIDR[:PORT]`.

use std::fmt;
use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};
use serde::{Serialize, Serializer};

use super::domain::parse_port;
use super::error::RuleError;
use super::host::printable;
use crate::addr::canonical;

/// One IP grant: an address range, optionally limited to one port. It grants the range both as
/// a literal destination and as the resolved address of an allowed name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpGrant {
    /// The range. IPv4-mapped IPv6 ranges are stored as the IPv4 range they denote, so that
    /// they match the canonical addresses the checks use.
    #[serde(serialize_with = "serialize_net")]
    pub net: IpNet,
    /// The only port granted; `None` grants every port.
    pub port: Option<u16>,
}

impl IpGrant {
    /// Parses `10.0.0.0/8`, `127.0.0.1`, `127.0.0.1:8080`, `10.0.0.0/8:443`, `::1`, `::1/128`,
    /// `[::1]:443`, `[2001:db8::]/32:443` or `[2001:db8::/32]:443`. Addresses must be in
    /// standard notation (dotted quad, RFC 5952-style IPv6); a bare IPv6 address has no port
    /// (use brackets); a range with bits set after its prefix (`10.1.2.3/8`) is refused.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let invalid = || RuleError::InvalidIpGrant {
            value: printable(text),
        };
        let (net_text, port) = split_port(text).ok_or_else(invalid)?;
        let port = port.map(|p| parse_port(text, p)).transpose()?;
        let net = if net_text.contains('/') {
            let net: IpNet = net_text.parse().map_err(|_| invalid())?;
            // `IpNet`'s parser is lenient about the prefix text; insist on a plain number.
            let (addr, len) = net_text.split_once('/').ok_or_else(invalid)?;
            if addr.parse::<IpAddr>().is_err() || !len.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid());
            }
            if net.addr() != net.network() {
                return Err(RuleError::GrantHostBits {
                    value: printable(text),
                    network: net.trunc().to_string(),
                });
            }
            net
        } else {
            IpNet::from(net_text.parse::<IpAddr>().map_err(|_| invalid())?)
        };
        Ok(IpGrant {
            net: canonical_net(net),
            port,
        })
    }

    /// Whether the grant covers `ip` (compared in [`canonical`] form) on `port`.
    pub fn matches(&self, ip: IpAddr, port: u16) -> bool {
        self.covers(ip) && self.port.is_none_or(|p| p == port)
    }

    /// Whether the grant covers `ip` (canonical form) on some port.
    pub fn covers(&self, ip: IpAddr) -> bool {
        self.net.contains(&canonical(ip))
    }
}

/// As the user would write it: `10.0.0.0/8:443`, `127.0.0.1`, `[::1]:443`.
impl fmt::Display for IpGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let single = self.net.prefix_len() == self.net.max_prefix_len();
        match (self.net, self.port) {
            (net, None) if single => write!(f, "{}", net.addr()),
            (net, None) => write!(f, "{net}"),
            (IpNet::V4(net), Some(port)) if single => write!(f, "{}:{port}", net.addr()),
            (IpNet::V4(net), Some(port)) => write!(f, "{net}:{port}"),
            (IpNet::V6(net), Some(port)) if single => write!(f, "[{}]:{port}", net.addr()),
            (IpNet::V6(net), Some(port)) => write!(f, "[{net}]:{port}"),
        }
    }
}

/// Splits `text` into the range text and the port text. `None` if it is malformed.
fn split_port(text: &str) -> Option<(String, Option<&str>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (inner, after) = rest.split_once(']')?;
        let (prefix, port) = match after.strip_prefix('/') {
            Some(tail) => match tail.split_once(':') {
                Some((len, port)) => (Some(len), Some(port)),
                None => (Some(tail), None),
            },
            None if after.is_empty() => (None, None),
            None => (None, Some(after.strip_prefix(':')?)),
        };
        if inner.contains('/') && prefix.is_some() {
            return None;
        }
        let net = match prefix {
            Some(len) => format!("{inner}/{len}"),
            None => inner.to_owned(),
        };
        return Some((net, port));
    }
    match text.matches(':').count() {
        0 => Some((text.to_owned(), None)),
        // IPv4 (or IPv4 range) with a port.
        1 => text
            .split_once(':')
            .map(|(net, port)| (net.to_owned(), Some(port))),
        // Bare IPv6: no port.
        _ => Some((text.to_owned(), None)),
    }
}

/// IPv4-mapped IPv6 ranges (`::ffff:0:0/96` and narrower) become the IPv4 range they denote.
fn canonical_net(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net {
        if v6.prefix_len() >= 96 {
            if let Some(v4) = v6.network().to_ipv4_mapped() {
                if let Ok(v4net) = Ipv4Net::new(v4, v6.prefix_len() - 96) {
                    return IpNet::V4(v4net);
                }
            }
        }
    }
    net
}

fn serialize_net<S: Serializer>(net: &IpNet, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(net)
}

#[cfg(test)]
#[path = "ip_grant_tests.rs"]
mod tests;
