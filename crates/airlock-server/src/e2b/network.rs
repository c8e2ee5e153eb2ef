//! E2B's network options as an airlock network policy.
//!
//! - `allow_internet_access: false` (no other rule): no network at all.
//! - No option at all: the server's default ([`DefaultNetwork`]); by default any public
//!   destination by name through the egress proxy (the proxy still refuses private, loopback
//!   and metadata addresses, and IP literals without a grant).
//! - `network.allowOut` / `denyOut`: egress proxy rules. Domains (`example.com`,
//!   `*.example.com`) become allow/deny domain rules, IPs and CIDRs allow-ip grants. A
//!   `denyOut` of `0.0.0.0/0` (E2B's idiom; also `allow_internet_access: false`) means "only
//!   what `allowOut` lists"; otherwise `allowOut` adds to the public internet.
//!   Any other address or range in `denyOut` (`8.8.8.8`, `10.0.0.0/8`) becomes a `deny_ip`
//!   rule: never reached, as a literal or as what an allowed name resolves to (deny wins).

use super::error::E2bError;
use super::DefaultNetwork;
use airlock_policy::{NetworkMode, NetworkSection};
use serde::Deserialize;

/// `network` of a create request. `allowPublicTraffic` and `maskRequestHost` are about traffic
/// into the box's ports ([`super::ingress`]), the rest about its egress.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkOptions {
    #[serde(default)]
    pub allow_out: Option<Vec<String>>,
    #[serde(default)]
    pub deny_out: Option<Vec<String>>,
    #[serde(default)]
    pub mask_request_host: Option<String>,
    #[serde(default)]
    pub allow_public_traffic: Option<bool>,
    /// Per-host request transforms carrying stored secrets ([`super::secrets::rules`]).
    #[serde(default)]
    pub rules: Option<serde_json::Value>,
}

fn is_everything(rule: &str) -> bool {
    matches!(rule.trim(), "0.0.0.0/0" | "::/0")
}

/// Whether `rule` is an IP address or CIDR range (else it is taken as a domain).
fn is_ip_rule(rule: &str) -> bool {
    let addr = rule.split('/').next().unwrap_or(rule);
    addr.parse::<std::net::IpAddr>().is_ok()
}

/// The network section of a box made from E2B's options.
pub fn network_section(
    allow_internet: Option<bool>,
    options: Option<&NetworkOptions>,
    default: DefaultNetwork,
) -> Result<NetworkSection, E2bError> {
    let empty = Vec::new();
    let allow_out = options.and_then(|o| o.allow_out.as_ref()).unwrap_or(&empty);
    let deny_out = options.and_then(|o| o.deny_out.as_ref()).unwrap_or(&empty);
    let only_listed = allow_internet == Some(false) || deny_out.iter().any(|r| is_everything(r));
    let mut section = NetworkSection::default();
    if allow_out.is_empty()
        && deny_out.is_empty()
        && allow_internet.is_none()
        && default == DefaultNetwork::None
    {
        section.mode = Some(NetworkMode::None);
        return Ok(section);
    }
    if only_listed && allow_out.is_empty() {
        section.mode = Some(NetworkMode::None);
        return Ok(section);
    }
    section.mode = Some(NetworkMode::Proxy);
    if !only_listed {
        section.public_internet = Some(true);
    }
    for rule in allow_out {
        let rule = rule.trim();
        if is_everything(rule) {
            if !only_listed {
                continue;
            }
            return Err(E2bError::InvalidArgument(
                "allowOut 0.0.0.0/0 with everything denied is contradictory; list the destinations to allow".into(),
            ));
        }
        if is_ip_rule(rule) {
            section.allow_ip.push(rule.to_string());
        } else {
            section.allow_domain.push(rule.to_string());
        }
    }
    for rule in deny_out {
        let rule = rule.trim();
        if is_everything(rule) {
            continue;
        }
        if is_ip_rule(rule) {
            section.deny_ip.push(rule.to_string());
        } else {
            section.deny_domain.push(rule.to_string());
        }
    }
    Ok(section)
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
