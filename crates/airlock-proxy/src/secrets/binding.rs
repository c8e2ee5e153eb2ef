//! A box's secrets as the proxy holds them: parsed host patterns, placeholder and value.

use crate::rules::{DomainPattern, RuleError};
use airlock_policy::{HeaderSet, SecretBinding, SecretValue};
use hyper::header::{HeaderName, HeaderValue};

/// Why a box's secrets cannot be held.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("secret {name}: host {host:?} is not a valid pattern: {source}")]
    Host {
        name: String,
        host: String,
        source: RuleError,
    },
    #[error("secret {name}: header {header:?} cannot be set: {why}")]
    Header {
        name: String,
        header: String,
        why: String,
    },
    #[error("secret {name} has no value (a box restored from a record cannot use its secrets; give them again)")]
    NoValue { name: String },
}

/// One secret: the only hosts that receive its value, and what the box holds instead.
pub struct BoxSecret {
    pub name: String,
    /// Each with its port (the policy fills in 443).
    pub hosts: Vec<DomainPattern>,
    pub placeholder: String,
    /// Whether request bodies are rewritten too.
    pub body: bool,
    /// Headers set on requests to a host (E2B's network rules), their values holding
    /// placeholders.
    pub set_headers: Vec<SetHeader>,
    value: SecretValue,
}

/// A header set on requests to the hosts `host` matches.
#[derive(Debug)]
pub struct SetHeader {
    pub host: DomainPattern,
    pub name: HeaderName,
    pub value: HeaderValue,
}

/// Headers that describe the connection or the message's framing: a rule may not set them.
const FRAMING: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// Parses one header a binding sets.
fn set_header(b: &SecretBinding, h: &HeaderSet) -> Result<SetHeader, SecretsError> {
    let fail = |why: String| SecretsError::Header {
        name: b.name.clone(),
        header: h.name.clone(),
        why,
    };
    let name = HeaderName::from_bytes(h.name.as_bytes())
        .map_err(|_| fail("it is not a valid header name".into()))?;
    if FRAMING.contains(&name.as_str()) {
        return Err(fail(
            "it describes the connection or the message's framing, which the proxy owns".into(),
        ));
    }
    let value = HeaderValue::from_str(&h.value)
        .map_err(|_| fail("its value holds characters a header cannot carry".into()))?;
    let host =
        DomainPattern::parse(&h.host).map_err(|e| fail(format!("host {:?}: {e}", h.host)))?;
    Ok(SetHeader { host, name, value })
}

impl BoxSecret {
    /// The value, for the request to a bound host.
    pub fn value(&self) -> &[u8] {
        self.value.expose()
    }

    /// Whether `host` (normalised) on `port` may receive this secret.
    pub fn bound_to(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|p| p.matches(host, port))
    }

    /// The binding as the user wrote it, for events: `NAME -> api.example:443`.
    pub fn rule(&self) -> String {
        let hosts: Vec<String> = self.hosts.iter().map(|h| h.to_string()).collect();
        format!("secret {} -> {}", self.name, hosts.join(", "))
    }
}

impl std::fmt::Debug for BoxSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoxSecret")
            .field("name", &self.name)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// Every secret of one box.
#[derive(Debug, Default)]
pub struct BoxSecrets {
    pub secrets: Vec<BoxSecret>,
}

impl BoxSecrets {
    /// Takes the resolved bindings; fails on a bad host pattern or a binding without its value.
    pub fn from_bindings(bindings: &[SecretBinding]) -> Result<BoxSecrets, SecretsError> {
        let mut secrets = Vec::new();
        for b in bindings {
            let value = b.value.clone().ok_or_else(|| SecretsError::NoValue {
                name: b.name.clone(),
            })?;
            let mut hosts = Vec::new();
            for h in &b.hosts {
                let pattern = DomainPattern::parse(h).map_err(|source| SecretsError::Host {
                    name: b.name.clone(),
                    host: h.clone(),
                    source,
                })?;
                hosts.push(pattern);
            }
            let set_headers = b
                .set_headers
                .iter()
                .map(|h| set_header(b, h))
                .collect::<Result<Vec<_>, _>>()?;
            secrets.push(BoxSecret {
                name: b.name.clone(),
                hosts,
                placeholder: b.placeholder.clone(),
                body: b.body,
                set_headers,
                value,
            });
        }
        Ok(BoxSecrets { secrets })
    }

    /// Whether connections to `host` (normalised) on `port` are intercepted: some secret is
    /// bound there.
    pub fn intercepts(&self, host: &str, port: u16) -> bool {
        self.secrets.iter().any(|s| s.bound_to(host, port))
    }

    /// The secrets bound to `host` on `port`.
    pub fn bound(&self, host: &str, port: u16) -> impl Iterator<Item = &BoxSecret> {
        let host = host.to_string();
        self.secrets.iter().filter(move |s| s.bound_to(&host, port))
    }

    /// The DNS names the box's CA may sign for (its name constraints).
    pub fn ca_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .secrets
            .iter()
            .flat_map(|s| s.hosts.iter().map(|h| h.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }
}
