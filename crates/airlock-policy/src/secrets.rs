//! Secrets the egress proxy adds to a box's requests on their way out. A secret is bound to the
//! hosts that may receive it; the box only ever holds a placeholder (see the proxy's `secrets`).
//! Values are given by reference (an environment variable, a file) or by the caller's program
//! (stdin, an API body), never written in a policy file, and are never serialized.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use zeroize::Zeroizing;

/// A secret's value. It cannot be serialized or printed (`Debug` shows `<redacted>`), and its
/// memory is wiped when the last copy is dropped.
#[derive(Clone)]
pub struct SecretValue(Arc<Zeroizing<Vec<u8>>>);

impl SecretValue {
    /// Wraps the bytes of a value (one trailing newline, as files and `echo` leave, is removed).
    pub fn new(mut bytes: Vec<u8>) -> SecretValue {
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        }
        SecretValue(Arc::new(Zeroizing::new(bytes)))
    }

    /// The value's bytes, for the one place that sends them (the proxy's upstream request).
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

impl PartialEq for SecretValue {
    fn eq(&self, other: &SecretValue) -> bool {
        self.expose() == other.expose()
    }
}

/// Where a secret's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretSource {
    /// `env:VAR`: the caller's environment variable `VAR`.
    Env(String),
    /// `file:PATH`: the file's content (one trailing newline removed).
    File(PathBuf),
    /// Given by the program that asked for the box (stdin, an API body); never from a file.
    Value(SecretValue),
}

impl<'de> Deserialize<'de> for SecretSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SecretSource, D::Error> {
        let text = String::deserialize(d)?;
        SecretSource::parse_reference(&text).map_err(serde::de::Error::custom)
    }
}

impl SecretSource {
    /// Parses `env:VAR` or `file:PATH`.
    pub fn parse_reference(text: &str) -> Result<SecretSource, String> {
        match text.split_once(':') {
            Some(("env", var)) if !var.is_empty() => Ok(SecretSource::Env(var.to_string())),
            Some(("file", path)) if !path.is_empty() => Ok(SecretSource::File(path.into())),
            _ => Err(
                "a secret's `from` is \"env:VAR\" or \"file:PATH\"; a value is never written in a policy file".into(),
            ),
        }
    }
}

/// One `[secrets]` entry: `NAME = { hosts = ["api.example"], from = "env:VAR" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretEntry {
    /// `NAME[:PORT]` or `*.NAME[:PORT]` (port 443 when none is given): the only destinations
    /// that receive the value. Binding a secret also allows these hosts.
    pub hosts: Vec<String>,
    pub from: SecretSource,
    /// Also replace the placeholder in request bodies (default: headers only).
    #[serde(default)]
    pub body: bool,
}

/// A secret as the box's proxy holds it. Serialized (receipts, the store) without its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretBinding {
    /// The variable that holds the placeholder inside the box.
    pub name: String,
    /// The destinations that receive the value, each with its port.
    pub hosts: Vec<String>,
    /// What the box sees instead of the value: random, unique to this box and secret.
    pub placeholder: String,
    /// Whether request bodies are rewritten too.
    pub body: bool,
    /// Headers the proxy sets (replacing any the box sent under the same name) on requests to
    /// some of these hosts; their values hold this or other bound secrets' placeholders, which
    /// the proxy then replaces as in any header (E2B's network rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_headers: Vec<HeaderSet>,
    /// The value; absent in a deserialized record (a box restored from one cannot use it).
    #[serde(skip)]
    pub value: Option<SecretValue>,
}

/// A header the proxy sets on requests to `host` (a pattern of the binding's hosts, with its
/// port): `name: value`, the value holding placeholders rather than secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeaderSet {
    pub host: String,
    pub name: String,
    pub value: String,
}

/// The port a secret's host pattern means when it names none.
pub const SECRET_DEFAULT_PORT: u16 = 443;

/// A random placeholder for secret `name`: `airlock-secret-NAME-<32 hex digits>`.
pub fn new_placeholder(name: &str) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("airlock-secret-{name}-{hex}"))
}

/// `host` with the default port added when it names none (`[v6]:port` never occurs: secrets
/// bind names, not addresses).
pub fn with_port(host: &str) -> String {
    match host.rsplit_once(':') {
        Some((_, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            host.to_string()
        }
        _ => format!("{host}:{SECRET_DEFAULT_PORT}"),
    }
}

/// Resolves the `[secrets]` of a policy: checks names and hosts, reads each value from where
/// it is referenced and makes the box's placeholder. Fails closed: a secret that cannot be read
/// or enforced is an error naming it, never an empty value.
pub(crate) fn resolve_secrets(
    file: &crate::PolicyFile,
    network: crate::NetworkMode,
    ctx: &crate::ResolveContext<'_>,
) -> Result<Vec<SecretBinding>, crate::PolicyError> {
    use crate::PolicyError;
    let fail = |name: &str, reason: String| PolicyError::Secret {
        name: name.to_string(),
        reason,
    };
    if file.secrets.is_empty() {
        return Ok(Vec::new());
    }
    if network != crate::NetworkMode::Proxy {
        return Err(PolicyError::NeedsProxy { flag: "--secret" });
    }
    let mut out = Vec::new();
    for (name, entry) in &file.secrets {
        crate::resolve::check_env_name(name, name).map_err(|_| {
            fail(
                name,
                "a secret's name is the variable that holds its placeholder in the box: letters, digits and '_', not starting with a digit".into(),
            )
        })?;
        if entry.hosts.is_empty() {
            return Err(fail(
                name,
                "it is bound to no host; add --secret-host PATTERN (hosts = [...] in a policy file)"
                    .into(),
            ));
        }
        let value = match &entry.from {
            SecretSource::Env(var) => match ctx.env.get(var) {
                Some(v) => SecretValue::new(v.as_bytes().to_vec()),
                None => {
                    return Err(fail(
                        name,
                        format!("the variable {var} is not set in airlock's environment"),
                    ))
                }
            },
            SecretSource::File(path) => {
                let path = if path.is_absolute() {
                    path.clone()
                } else {
                    ctx.cwd.join(path)
                };
                let bytes = ctx.host.read_secret(&path).map_err(|e| {
                    fail(
                        name,
                        format!("cannot read {}: {}", path.display(), e.kind()),
                    )
                })?;
                SecretValue::new(bytes)
            }
            SecretSource::Value(v) => v.clone(),
        };
        if value.expose().is_empty() {
            return Err(fail(name, "its value is empty".into()));
        }
        if value.expose().iter().any(|b| b.is_ascii_control()) {
            return Err(fail(
                name,
                "its value holds control characters (it goes into HTTP headers)".into(),
            ));
        }
        let placeholder = new_placeholder(name)
            .map_err(|e| fail(name, format!("no randomness for its placeholder: {e}")))?;
        out.push(SecretBinding {
            name: name.clone(),
            hosts: entry.hosts.iter().map(|h| with_port(h)).collect(),
            placeholder,
            body: entry.body,
            set_headers: Vec::new(),
            value: Some(value),
        });
    }
    Ok(out)
}

/// The values of a policy's secrets, for handing a resolved policy to another of airlock's own
/// processes (a box's host process) over its private control socket: the policy itself is
/// serialized without them. `Debug` shows names only.
#[derive(Clone, Default, PartialEq)]
pub struct SecretValues(Vec<(String, SecretValue)>);

impl SecretValues {
    /// Values by binding name, for bindings made outside a policy file (E2B's stored secrets).
    pub fn from_pairs(pairs: Vec<(String, SecretValue)>) -> SecretValues {
        SecretValues(pairs)
    }

    /// The values held by `policy`'s bindings.
    pub fn of(policy: &crate::ResolvedPolicy) -> SecretValues {
        SecretValues(
            policy
                .secrets
                .iter()
                .filter_map(|b| b.value.clone().map(|v| (b.name.clone(), v)))
                .collect(),
        )
    }

    /// Puts the values back into the bindings of the same names.
    pub fn restore(self, policy: &mut crate::ResolvedPolicy) {
        for (name, value) in self.0 {
            if let Some(b) = policy.secrets.iter_mut().find(|b| b.name == name) {
                b.value = Some(value);
            }
        }
    }
}

impl fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| n))
            .finish()
    }
}

impl Serialize for SecretValues {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value.expose())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SecretValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SecretValues, D::Error> {
        let map = std::collections::BTreeMap::<String, Vec<u8>>::deserialize(d)?;
        Ok(SecretValues(
            map.into_iter()
                .map(|(k, v)| (k, SecretValue(Arc::new(Zeroizing::new(v)))))
                .collect(),
        ))
    }
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
