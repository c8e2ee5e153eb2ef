//! The whole rule set, parsed from the four command-line flags.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::domain::DomainPattern;
use super::error::RuleError;
use super::host::{normalize_host, printable};
use super::ip_grant::IpGrant;
use crate::addr::{canonical, classify};

/// The egress rules of one box. The default (empty) rule set allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EgressRules {
    /// `--allow-domain`: names (and ports) that may be reached.
    pub allow_domains: Vec<DomainPattern>,
    /// `--deny-domain`: names (and ports) that may not be reached; deny wins over allow.
    pub deny_domains: Vec<DomainPattern>,
    /// `--allow-ip`: address ranges that may be reached, as literals or as resolved addresses.
    pub allow_ips: Vec<IpGrant>,
    /// `deny_ip`: address ranges (and ports) never reached, as literals or as resolved
    /// addresses; deny wins over every allow rule and over `public_internet`.
    pub deny_ips: Vec<IpGrant>,
    /// `--map-host`: names the proxy resolves itself, without DNS (normalised name → canonical
    /// address). A mapping grants nothing by itself.
    pub map_hosts: BTreeMap<String, IpAddr>,
    /// `public_internet`: every name not denied is allowed, as far as the address checks let it
    /// through — a name that resolves to a private, loopback, link-local (metadata) or other
    /// non-public address still needs `--allow-ip`, and IP literals still need a grant. Never
    /// set by a domain pattern (a bare `*` stays refused); only by the explicit policy key.
    pub public_internet: bool,
}

impl EgressRules {
    /// Parses the values of `--allow-domain`, `--deny-domain`, `--allow-ip` and `--map-host`.
    /// The first bad value fails the whole set (fail closed); its error names the flag.
    pub fn parse(
        allow_domain: &[String],
        deny_domain: &[String],
        allow_ip: &[String],
        map_host: &[String],
    ) -> Result<Self, RuleError> {
        let mut map_hosts = BTreeMap::new();
        for entry in map_host {
            let (name, ip) = parse_map_host(entry).map_err(|e| e.in_flag("--map-host"))?;
            match map_hosts.get(&name) {
                Some(&first) if first != ip => {
                    return Err(RuleError::MapHostConflict {
                        name,
                        first,
                        second: ip,
                    }
                    .in_flag("--map-host"))
                }
                _ => {
                    map_hosts.insert(name, ip);
                }
            }
        }
        Ok(EgressRules {
            allow_domains: parse_all(allow_domain, "--allow-domain", DomainPattern::parse)?,
            deny_domains: parse_all(deny_domain, "--deny-domain", DomainPattern::parse)?,
            allow_ips: parse_all(allow_ip, "--allow-ip", IpGrant::parse)?,
            deny_ips: Vec::new(),
            map_hosts,
            public_internet: false,
        })
    }

    /// The rules of a policy's egress section: every one of its keys, so no caller can leave
    /// one out (`deny_ip` dropped would be a silent allow).
    pub fn from_egress(e: &airlock_policy::Egress) -> Result<Self, RuleError> {
        EgressRules::parse(&e.allow_domain, &e.deny_domain, &e.allow_ip, &e.map_host)?
            .with_public_internet(e.public_internet)
            .with_deny_ips(&e.deny_ip)
    }

    /// The same rules, also refusing these address ranges (`CIDR[:PORT]`, see
    /// [`EgressRules::deny_ips`]).
    pub fn with_deny_ips(mut self, deny_ip: &[String]) -> Result<Self, RuleError> {
        self.deny_ips = parse_all(deny_ip, "deny_ip", IpGrant::parse)?;
        Ok(self)
    }

    /// The same rules, also allowing every public destination by name (see
    /// [`EgressRules::public_internet`]).
    pub fn with_public_internet(mut self, on: bool) -> Self {
        self.public_internet = on;
        self
    }
}

fn parse_all<T>(
    values: &[String],
    flag: &'static str,
    parse: fn(&str) -> Result<T, RuleError>,
) -> Result<Vec<T>, RuleError> {
    values
        .iter()
        .map(|value| parse(value).map_err(|e| e.in_flag(flag)))
        .collect()
}

/// `NAME=IP`: a host name (no wildcard) and an address in standard notation, IPv6 optionally
/// bracketed.
pub fn parse_map_host(entry: &str) -> Result<(String, IpAddr), RuleError> {
    let invalid = || RuleError::InvalidMapHost {
        value: printable(entry),
    };
    let (name, ip_text) = entry.split_once('=').ok_or_else(invalid)?;
    let name = normalize_host(name)?;
    let ip_text = ip_text
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(ip_text);
    let ip = canonical(ip_text.parse::<IpAddr>().map_err(|_| invalid())?);
    let class = classify(ip);
    if class.is_never_destination() {
        return Err(RuleError::MapHostNotDestination {
            value: printable(entry),
            ip,
            class: class.describe(),
        });
    }
    Ok((name, ip))
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
