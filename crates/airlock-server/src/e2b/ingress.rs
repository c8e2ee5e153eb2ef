//! Traffic into a box's ports (`sandbox.get_host(port)`): which requests are such traffic,
//! and who may send them.
//!
//! - A request whose `Host` is `{port}-{sandboxID}.{domain}`, under the domain the operator
//!   gave `airlock serve --e2b-domain`, is for that port of that sandbox (E2B's host format;
//!   a domain without a port matches a `Host` with any port). Ports 49983 and 49999 are envd
//!   and the code interpreter, served as with the `E2b-Sandbox-*` headers; any other port is
//!   relayed to the box ([`super::ingress_proxy`]).
//! - E2B's traffic rule: a sandbox made with `network.allowPublicTraffic: false` takes only
//!   requests carrying its traffic token in `e2b-traffic-access-token`; one made without it
//!   (E2B's default) takes any. A sandbox the E2B API did not make (native API, fork,
//!   snapshot) has no such choice recorded and requires the token: fail closed.
//! - `network.maskRequestHost` is the `Host` the box's server sees (`${PORT}` is replaced by
//!   the port), instead of the public name.

use super::error::E2bError;
use super::network::NetworkOptions;

/// The header E2B's SDKs and edge carry the traffic token in.
pub const TRAFFIC_TOKEN_HEADER: &str = "e2b-traffic-access-token";
/// Longest `maskRequestHost`, after `${PORT}` is replaced (a DNS name's limit).
const MAX_HOST: usize = 253;

/// A port of a sandbox, named by a request's `Host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHost {
    pub port: u16,
    pub sandbox: String,
}

/// Who may reach a sandbox's ports, and the `Host` its servers see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressRule {
    /// Requests without the traffic token are let in.
    pub public: bool,
    /// `maskRequestHost`, with `${PORT}` still in it.
    pub mask_host: Option<String>,
}

impl Default for IngressRule {
    /// A sandbox with no recorded rule: the token is required.
    fn default() -> IngressRule {
        IngressRule {
            public: false,
            mask_host: None,
        }
    }
}

/// The operator's domain, checked: a host name, optionally with a port (`localhost`,
/// `sandbox.example.com`, `localhost:7777`). Lowercased.
pub fn check_domain(domain: &str) -> Result<String, String> {
    let d = domain.trim().to_ascii_lowercase();
    let (name, port) = match d.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (d.as_str(), None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > MAX_HOST || !name.split('.').all(label_ok) {
        return Err(format!(
            "{domain:?} is not a host name: give a domain like `localhost` or `sandbox.example.com` (its `*.` names must reach this server)"
        ));
    }
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return Err(format!(
            "{domain:?}: the port after `:` must be a number from 1 to 65535"
        ));
    }
    Ok(d)
}

/// The sandbox port `host` (a request's `Host` header) names under `domain` (checked by
/// [`check_domain`]), if it is one.
pub fn parse_host(host: &str, domain: &str) -> Option<PortHost> {
    let host = host.trim().to_ascii_lowercase();
    let host = if domain.contains(':') {
        host.as_str()
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host.as_str(),
        }
    };
    let label = host.strip_suffix(domain)?.strip_suffix('.')?;
    let (port, sandbox) = label.split_once('-')?;
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
    if !super::valid_sandbox_id(sandbox) {
        return None;
    }
    Some(PortHost {
        port,
        sandbox: sandbox.to_string(),
    })
}

/// The rule a create request's network options give (E2B's default: public traffic).
pub fn rule_of(options: Option<&NetworkOptions>) -> Result<IngressRule, E2bError> {
    let mask_host = options.and_then(|o| o.mask_request_host.clone());
    if let Some(mask) = &mask_host {
        check_mask(mask)?;
    }
    Ok(IngressRule {
        public: options.and_then(|o| o.allow_public_traffic).unwrap_or(true),
        mask_host,
    })
}

/// A `maskRequestHost` must be a host name (with `${PORT}` anywhere, and an optional port).
fn check_mask(mask: &str) -> Result<(), E2bError> {
    let sample = mask.replace("${PORT}", "8000");
    check_domain(&sample).map(|_| ()).map_err(|_| {
        E2bError::InvalidArgument(format!(
            "network.maskRequestHost {mask:?} must be a host name, where `${{PORT}}` stands for the port (e.g. \"${{PORT}}-myapp.example.com\")"
        ))
    })
}

impl IngressRule {
    /// Whether a request with `token` (the `e2b-traffic-access-token` header) may reach the
    /// sandbox whose traffic token is `expected` (`None`: the sandbox is unknown).
    pub fn admits(&self, token: Option<&str>, expected: Option<&str>) -> Result<(), E2bError> {
        if self.public {
            return Ok(());
        }
        match (token, expected) {
            (Some(t), Some(e)) if crate::secrets::same_hash(t, e) => Ok(()),
            (None, _) => Err(E2bError::Unauthenticated(format!(
                "this sandbox does not allow public traffic: send its traffic access token in the {TRAFFIC_TOKEN_HEADER} header"
            ))),
            _ => Err(E2bError::Unauthenticated(format!(
                "the {TRAFFIC_TOKEN_HEADER} header does not match this sandbox's traffic access token"
            ))),
        }
    }

    /// The `Host` the box's server sees for a request to `port` that came with `host`.
    pub fn host_seen(&self, port: u16, host: &str) -> String {
        match &self.mask_host {
            Some(mask) => mask.replace("${PORT}", &port.to_string()),
            None => host.to_string(),
        }
    }
}

#[cfg(test)]
#[path = "ingress_tests.rs"]
mod tests;
