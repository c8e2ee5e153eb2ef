//! E2B's `network.rules` as secret bindings for the box's egress proxy.
//!
//! A rule is `{host: [{transform: {headers: {NAME: VALUE}}}]}` (`host` an exact name or
//! `*.name`, lowercased; airlock also takes `host:PORT`, else port 443). Where several rule
//! hosts match a request, only the most specific one's headers are set (exact, else the
//! longest wildcard suffix), as E2B does. `VALUE` holds placeholders
//! `${e2b.secrets.SECRET}` (what `Secret.fill` makes). Each secret a rule names becomes a
//! binding to the hosts whose rules name it, with a random placeholder of the proxy's own; the
//! rule's headers become headers the binding sets there, their placeholders swapped for the
//! proxy's. So the proxy terminates TLS for those hosts only (with the box's CA), sets the
//! headers (replacing the box's own of the same name) and puts the values in. Like E2B, a rule
//! allows nothing: its host must be in `allowOut` too.
//!
//! Refused, each by name: a header without a secret (the box can send a constant itself, and
//! airlock does not open TLS for one), `${e2b.identity.tokens.*}` (no workload identity here),
//! any other `${e2b.…}`, and hosts given as addresses (secrets are bound to names).

use super::super::error::E2bError;
use airlock_policy::{new_placeholder, with_port, HeaderSet, SecretBinding, SecretValue};
use serde_json::Value;
use std::collections::BTreeMap;

const SECRET_PREFIX: &str = "${e2b.secrets.";

/// One piece of a header value: text, or the secret of that name.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Secret(&'a str),
}

/// Splits a header value at its placeholders.
fn pieces<'a>(host: &str, header: &str, value: &'a str) -> Result<Vec<Piece<'a>>, E2bError> {
    let bad = |why: String| {
        E2bError::InvalidArgument(format!("network.rules[{host:?}] header {header:?}: {why}"))
    };
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let tail = &rest[at..];
        let end = tail
            .find('}')
            .ok_or_else(|| bad("a \"${\" is not closed by \"}\"".into()))?;
        let inner = &tail[..=end];
        if let Some(name) = inner
            .strip_prefix(SECRET_PREFIX)
            .and_then(|n| n.strip_suffix('}'))
        {
            super::vault::check_name(name).map_err(|e| bad(e.to_string()))?;
            out.push(Piece::Secret(name));
        } else if inner.starts_with("${e2b.identity.") {
            return Err(bad(format!(
                "{inner} is a workload identity token, which airlock does not mint; use a secret (Secret.create, then Secret.fill)"
            )));
        } else {
            return Err(bad(format!(
                "{inner} is not a placeholder airlock knows; the one it fills is ${{e2b.secrets.NAME}}"
            )));
        }
        rest = &tail[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    if !out.iter().any(|p| matches!(p, Piece::Secret(_))) {
        return Err(bad(
            "it names no secret; airlock's proxy sets headers only to carry a secret (${e2b.secrets.NAME}), a constant one the sandbox can send itself".into(),
        ));
    }
    Ok(out)
}

/// The headers each host's rules set, in rule order (a later rule's header replaces an
/// earlier one of the same name).
fn headers_by_host(rules: &Value) -> Result<BTreeMap<String, Vec<(String, String)>>, E2bError> {
    let bad = |why: String| E2bError::InvalidArgument(format!("network.rules: {why}"));
    let Some(map) = rules.as_object() else {
        return Err(bad("it must be an object of host: [rule, ...]".into()));
    };
    let mut out = BTreeMap::new();
    for (host, list) in map {
        let lower = host.trim().to_ascii_lowercase();
        let name = lower.as_str();
        let addr = name.split('/').next().unwrap_or(name);
        if addr.parse::<std::net::IpAddr>().is_ok() || addr.starts_with('[') {
            return Err(bad(format!(
                "{host:?} is an address; airlock binds secrets to host names (the name the sandbox connects to over HTTPS)"
            )));
        }
        let Some(list) = list.as_array() else {
            return Err(bad(format!("{host:?} must map to a list of rules")));
        };
        let mut headers: Vec<(String, String)> = Vec::new();
        for rule in list {
            let Some(transform) = rule.get("transform").filter(|t| !t.is_null()) else {
                continue;
            };
            let Some(set) = transform.get("headers").filter(|h| !h.is_null()) else {
                continue;
            };
            let Some(set) = set.as_object() else {
                return Err(bad(format!(
                    "{host:?}: transform.headers must be an object"
                )));
            };
            for (h, v) in set {
                let Some(v) = v.as_str() else {
                    return Err(bad(format!("{host:?}: header {h:?} must be a string")));
                };
                headers.retain(|(old, _)| !old.eq_ignore_ascii_case(h));
                headers.push((h.clone(), v.to_string()));
            }
        }
        if !headers.is_empty() && out.insert(with_port(name), headers).is_some() {
            return Err(bad(format!(
                "{host:?} is given twice (host names are not case-sensitive); give each host once"
            )));
        }
    }
    Ok(out)
}

/// The bindings `rules` make (without values) and the secret names they need, in order.
pub fn bindings(rules: &Value) -> Result<Vec<SecretBinding>, E2bError> {
    let mut bindings: Vec<SecretBinding> = Vec::new();
    for (host, headers) in headers_by_host(rules)? {
        for (header, value) in headers {
            let parts = pieces(&host, &header, &value)?;
            let mut template = String::new();
            let mut first = None;
            for p in parts {
                match p {
                    Piece::Text(t) => template.push_str(t),
                    Piece::Secret(name) => {
                        let at = match bindings.iter().position(|b| b.name == name) {
                            Some(at) => at,
                            None => {
                                bindings.push(new_binding(name)?);
                                bindings.len() - 1
                            }
                        };
                        let b = &mut bindings[at];
                        if !b.hosts.contains(&host) {
                            b.hosts.push(host.clone());
                        }
                        template.push_str(&b.placeholder);
                        first.get_or_insert(at);
                    }
                }
            }
            if let Some(at) = first {
                bindings[at].set_headers.push(HeaderSet {
                    host: host.clone(),
                    name: header,
                    value: template,
                });
            }
        }
    }
    check_with_the_proxy(&bindings)?;
    Ok(bindings)
}

fn new_binding(name: &str) -> Result<SecretBinding, E2bError> {
    let tag: String = name
        .chars()
        .take(48)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let placeholder = new_placeholder(&tag)
        .map_err(|e| E2bError::Internal(format!("no random bytes for a placeholder: {e}")))?;
    Ok(SecretBinding {
        name: name.to_string(),
        hosts: Vec::new(),
        placeholder,
        body: false,
        set_headers: Vec::new(),
        value: None,
    })
}

/// The proxy's own parser over the bindings (hosts, header names and values), so that what it
/// would refuse when the box starts is a 400 now.
fn check_with_the_proxy(bindings: &[SecretBinding]) -> Result<(), E2bError> {
    let probe: Vec<SecretBinding> = bindings
        .iter()
        .map(|b| SecretBinding {
            value: Some(SecretValue::new(b"probe".to_vec())),
            ..b.clone()
        })
        .collect();
    airlock_proxy::secrets::BoxSecrets::from_bindings(&probe)
        .map(|_| ())
        .map_err(|e| E2bError::InvalidArgument(format!("network.rules: {e}")))
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
