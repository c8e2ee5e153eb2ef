//! The decision procedure. Order: host syntax and port → IP literal path (needs a grant) or name
//! path (deny list → allow list → resolution → address checks). Everything not granted is
//! refused.

use std::net::{IpAddr, SocketAddr};

use super::outcome::{DenyReason, EgressDecision};
use super::resolver::Resolver;
use crate::addr::{canonical, classify, parse_ip_literal, AddrClass};
use crate::rules::{parse_host, DomainPattern, EgressRules, Host};

/// How much of a malformed host is echoed back in a decision.
const MAX_ECHOED_HOST: usize = 256;
/// How many refused addresses a message lists.
const MAX_LISTED_ADDRS: usize = 3;

/// The whole decision for one connection request to `host`:`port`.
///
/// 1. Port 0, and a host that is empty or contains `@`, `/`, `\`, whitespace, control
///    characters or `:` (other than in an IPv6 literal) are refused ([`DenyReason::BadHost`]).
/// 2. An IP literal in any notation ([`parse_ip_literal`]) needs an `--allow-ip` grant matching
///    address and port; multicast, broadcast and unspecified addresses are never allowed.
/// 3. A name is normalised; a matching `--deny-domain` refuses it (deny wins); otherwise an
///    `--allow-domain` must match name and port.
/// 4. The name is resolved through `--map-host` (never DNS) or else `resolver`.
/// 5. Every resolved address, in canonical form, that is not public or is one of `host_own`
///    (this host's own addresses) needs an `--allow-ip` grant matching it and the port;
///    multicast, broadcast and unspecified addresses are never allowed. The allowed addresses
///    are returned in resolver order; if none is left the request is refused.
pub fn decide(
    rules: &EgressRules,
    host: &str,
    port: u16,
    resolver: &dyn Resolver,
    host_own: &[IpAddr],
) -> EgressDecision {
    if port == 0 {
        return bad_host(host, port, "port 0 is not a destination port");
    }
    if let Some(problem) = syntax_problem(host) {
        return bad_host(host, port, problem);
    }
    let parsed = match parse_ip_literal(host) {
        Some(ip) => Host::Ip(canonical(ip)),
        None if host.contains(':') => {
            return bad_host(
                host,
                port,
                "a host name cannot contain `:` (the port is separate, and IPv6 zone ids are not accepted)",
            )
        }
        None => match parse_host(host) {
            Ok(parsed) => parsed,
            Err(e) => return bad_host(host, port, &e.to_string()),
        },
    };
    match parsed {
        Host::Ip(ip) => decide_ip(rules, ip, port),
        Host::Name(name) => decide_name(rules, name, port, resolver, host_own),
    }
}

fn syntax_problem(host: &str) -> Option<&'static str> {
    if host.is_empty() {
        Some("the host is empty")
    } else if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("the host contains whitespace or control characters")
    } else if host.contains('@') {
        Some("the host contains `@` (user information is not part of a host)")
    } else if host.contains('/') || host.contains('\\') {
        Some("the host contains a path separator")
    } else {
        None
    }
}

fn decide_ip(rules: &EgressRules, ip: IpAddr, port: u16) -> EgressDecision {
    let dest = SocketAddr::new(ip, port);
    let class = classify(ip);
    if class.is_never_destination() {
        return deny(
            ip.to_string(),
            port,
            DenyReason::ForbiddenAddress,
            None,
            format!(
                "{dest} is a {}, which is never a destination",
                class.describe()
            ),
        );
    }
    if let Some(denied) = rules.deny_ips.iter().find(|g| g.matches(ip, port)) {
        return deny(
            ip.to_string(),
            port,
            DenyReason::DeniedAddress,
            Some(format!("deny_ip {denied}")),
            format!(
                "{dest} is refused by deny_ip {denied} (deny rules win over allow rules); remove that rule to reach it"
            ),
        );
    }
    if let Some(grant) = rules.allow_ips.iter().find(|g| g.matches(ip, port)) {
        return EgressDecision::Allow {
            host: ip.to_string(),
            port,
            addrs: vec![dest],
            rule: format!("--allow-ip {grant}"),
        };
    }
    if let Some(grant) = rules.allow_ips.iter().find(|g| g.covers(ip)) {
        return deny(
            ip.to_string(),
            port,
            DenyReason::PortNotAllowed,
            Some(format!("--allow-ip {grant}")),
            format!(
                "{dest} is not allowed: --allow-ip {grant} grants other ports only; grant it with --allow-ip {dest}"
            ),
        );
    }
    deny(
        ip.to_string(),
        port,
        DenyReason::IpLiteralNotGranted,
        None,
        format!(
            "{dest} is an IP address ({}) that no --allow-ip grant covers; grant it with --allow-ip {dest}",
            class.describe()
        ),
    )
}

fn decide_name(
    rules: &EgressRules,
    name: String,
    port: u16,
    resolver: &dyn Resolver,
    host_own: &[IpAddr],
) -> EgressDecision {
    if let Some(denied) = rules.deny_domains.iter().find(|p| p.matches(&name, port)) {
        let message = format!(
            "{name}:{port} is refused by --deny-domain {denied} (deny rules win over allow rules); remove that rule to reach it"
        );
        let rule = Some(format!("--deny-domain {denied}"));
        return deny(name, port, DenyReason::DeniedDomain, rule, message);
    }
    let rule = match rules.allow_domains.iter().find(|p| p.matches(&name, port)) {
        Some(allowed) => format!("--allow-domain {allowed}"),
        None if rules.public_internet => PUBLIC_INTERNET_RULE.to_owned(),
        None => return not_allowed(&rules.allow_domains, name, port),
    };

    let (ips, source) = match rules.map_hosts.get(&name) {
        Some(&ip) => (vec![ip], format!("is mapped by --map-host {name}={ip}")),
        None => match resolver.resolve(&name, port) {
            Ok(ips) if !ips.is_empty() => (ips, "resolved".to_owned()),
            Ok(_) => {
                let message = format!(
                    "{name}:{port} is allowed by {rule} but resolved to no address; fix its DNS or map it with --map-host {name}=IP"
                );
                return deny(name, port, DenyReason::ResolveFailed, None, message);
            }
            Err(e) => {
                let message = format!(
                    "{name}:{port} is allowed by {rule} but could not be resolved on the host ({}); fix its DNS or map it with --map-host {name}=IP",
                    crate::rules::printable(&e.to_string())
                );
                return deny(name, port, DenyReason::ResolveFailed, None, message);
            }
        },
    };

    let mut addrs: Vec<SocketAddr> = Vec::new();
    let mut grants: Vec<String> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    let mut seen: Vec<IpAddr> = Vec::new();
    for ip in ips.into_iter().map(canonical) {
        if seen.contains(&ip) {
            continue;
        }
        seen.push(ip);
        let class = classify(ip);
        let own = host_own.iter().any(|&o| canonical(o) == ip);
        match check_address(rules, ip, port, class, own) {
            Ok(grant) => {
                addrs.push(SocketAddr::new(ip, port));
                if let Some(grant) = grant.filter(|g| !grants.contains(g)) {
                    grants.push(grant);
                }
            }
            Err(why) => refused.push(why),
        }
    }

    if addrs.is_empty() {
        let listed = refused
            .iter()
            .take(MAX_LISTED_ADDRS)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let more = refused.len().saturating_sub(MAX_LISTED_ADDRS);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let message = format!(
            "{name}:{port} is allowed by {rule} but {source} only to addresses that need a grant: {listed}{more}"
        );
        return deny(name, port, DenyReason::ForbiddenAddress, None, message);
    }
    let rule = std::iter::once(rule)
        .chain(grants)
        .collect::<Vec<_>>()
        .join(", ");
    EgressDecision::Allow {
        host: name,
        port,
        addrs,
        rule,
    }
}

/// `Ok(None)`: public, needs no grant; `Ok(Some(grant))`: granted by that `--allow-ip`;
/// `Err(text)`: refused, with what it is and how to grant it.
fn check_address(
    rules: &EgressRules,
    ip: IpAddr,
    port: u16,
    class: AddrClass,
    own: bool,
) -> Result<Option<String>, String> {
    let dest = SocketAddr::new(ip, port);
    if class.is_never_destination() {
        return Err(format!("{ip} ({}, never a destination)", class.describe()));
    }
    if let Some(denied) = rules.deny_ips.iter().find(|g| g.matches(ip, port)) {
        return Err(format!("{ip} (refused by deny_ip {denied})"));
    }
    if class.is_public() && !own {
        return Ok(None);
    }
    if let Some(grant) = rules.allow_ips.iter().find(|g| g.matches(ip, port)) {
        return Ok(Some(format!("--allow-ip {grant}")));
    }
    let what = if own {
        "this host's own address"
    } else {
        class.describe()
    };
    Err(format!("{ip} ({what}; grant it with --allow-ip {dest})"))
}

/// How a grant by the `public_internet` policy key is named in decisions.
pub const PUBLIC_INTERNET_RULE: &str = "public_internet";

fn not_allowed(allow: &[DomainPattern], name: String, port: u16) -> EgressDecision {
    if let Some(other) = allow.iter().find(|p| p.matches_name(&name)) {
        let message = format!(
            "{name}:{port} is not allowed: --allow-domain {other} grants other ports only; grant it with --allow-domain {name}:{port}"
        );
        let rule = Some(format!("--allow-domain {other}"));
        return deny(name, port, DenyReason::PortNotAllowed, rule, message);
    }
    let message = format!(
        "{name}:{port} is not in the allowlist; grant it with --allow-domain {name}:{port}"
    );
    deny(name, port, DenyReason::NotAllowed, None, message)
}

fn bad_host(host: &str, port: u16, problem: &str) -> EgressDecision {
    let mut shown = crate::rules::printable(host);
    if shown.len() > MAX_ECHOED_HOST {
        let cut = (0..=MAX_ECHOED_HOST)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str("...");
    }
    let message = format!(
        "`{shown}` port {port} is not a valid destination: {problem}; only well-formed host names and IP addresses can be granted (--allow-domain NAME[:PORT], --allow-ip CIDR[:PORT])"
    );
    deny(shown, port, DenyReason::BadHost, None, message)
}

fn deny(
    host: String,
    port: u16,
    reason: DenyReason,
    rule: Option<String>,
    message: String,
) -> EgressDecision {
    EgressDecision::Deny {
        host,
        port,
        reason,
        rule,
        message,
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
