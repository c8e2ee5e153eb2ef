//! `airlock serve --pool SPEC`: what a pool's boxes are made of and how many are kept ready.
//!
//! ```text
//! SPEC := [BACKEND ":"] PAIR ("," PAIR)*        native:size=4
//! PAIR := KEY "=" VALUE                         template=python,backend=gvisor,size=2
//! ```
//! Keys: `size` (required, 1 to [`MAX_POOL_SIZE`]), `name` (default: backend/template/network),
//! `backend` (default: the server's `--backend`), `template` (default `base`), `network`
//! (`none`, the default, or `proxy`: the claim brings its own allowlist; E2B's internet access is
//! a proxied box), and the limits fixed when a box starts: `memory`, `cpus`, `pids`, `disk`.
//! A create request matches the pool when everything its box is made of equals the pool's,
//! except what a claim sets (see [`super::key`]).

use airlock_policy::{BackendKind, NetworkMode};
use std::collections::BTreeSet;
use std::fmt;

/// The most boxes one pool keeps ready.
pub const MAX_POOL_SIZE: usize = 64;

/// One `--pool` as written, checked for form (the server resolves it into a policy at start).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolSpec {
    /// What `GET /v1/pools` and events call it.
    pub name: String,
    /// Boxes kept ready.
    pub size: usize,
    /// `None`: the server's `--backend`.
    pub backend: Option<BackendKind>,
    /// `None`: `base`.
    pub template: Option<String>,
    pub network: NetworkMode,
    /// Limits as the create request's `policy.limits` would give them (`memory`, `cpus`,
    /// `pids`, `disk`), JSON values.
    pub limits: serde_json::Map<String, serde_json::Value>,
}

/// Why a `--pool` value was refused; each message says how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolSpecError {
    #[error("is empty; write e.g. native:size=4 or template=NAME,backend=gvisor,size=2")]
    Empty,
    #[error("{part:?} is not KEY=VALUE; write e.g. size=4")]
    NotAPair { part: String },
    #[error("{key:?} is not a pool setting; use size, name, backend, template, network, memory, cpus, pids or disk")]
    UnknownKey { key: String },
    #[error("{key} is given twice; give each setting once")]
    Twice { key: String },
    #[error("size is missing; say how many boxes to keep ready, e.g. size=4")]
    NoSize,
    #[error("size={value:?}: give a whole number from 1 to {MAX_POOL_SIZE}")]
    BadSize { value: String },
    #[error("backend {value:?}: {why}")]
    BadBackend { value: String, why: String },
    #[error(
        "the backend is given twice ({first} before the colon, {second} as backend=); give it once"
    )]
    TwoBackends { first: String, second: String },
    #[error("network={value:?}: use none or proxy (a claimed box gets its create request's allowlist); host is never served to API callers")]
    BadNetwork { value: String },
    #[error("{key}={value:?}: {why}")]
    BadLimit {
        key: String,
        value: String,
        why: String,
    },
    #[error("name={value:?}: use 1 to 64 letters, digits, '-', '_', '.' or '/'")]
    BadName { value: String },
}

impl PoolSpec {
    /// Parses one `--pool` value.
    pub fn parse(text: &str) -> Result<PoolSpec, PoolSpecError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PoolSpecError::Empty);
        }
        let (prefix, rest) = match text.split_once(':') {
            Some((head, tail)) if !head.contains('=') && !head.contains(',') => {
                (Some(head.trim()), tail)
            }
            _ => (None, text),
        };
        let mut spec = PoolSpec {
            name: String::new(),
            size: 0,
            backend: prefix.map(parse_backend).transpose()?,
            template: None,
            network: NetworkMode::None,
            limits: serde_json::Map::new(),
        };
        let mut seen = BTreeSet::new();
        let mut name = None;
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .ok_or_else(|| PoolSpecError::NotAPair { part: part.into() })?;
            if !seen.insert(key.to_string()) {
                return Err(PoolSpecError::Twice { key: key.into() });
            }
            match key {
                "size" => spec.size = parse_size_count(value)?,
                "name" => name = Some(parse_name(value)?),
                "backend" => {
                    let kind = parse_backend(value)?;
                    if let Some(first) = spec.backend {
                        return Err(PoolSpecError::TwoBackends {
                            first: first.to_string(),
                            second: kind.to_string(),
                        });
                    }
                    spec.backend = Some(kind);
                }
                "template" => spec.template = Some(value.to_string()),
                "network" => {
                    spec.network = match value {
                        "none" => NetworkMode::None,
                        "proxy" => NetworkMode::Proxy,
                        _ => {
                            return Err(PoolSpecError::BadNetwork {
                                value: value.into(),
                            })
                        }
                    }
                }
                "memory" | "disk" => {
                    airlock_policy::parse_size(value).map_err(|e| PoolSpecError::BadLimit {
                        key: key.into(),
                        value: value.into(),
                        why: e.to_string(),
                    })?;
                    spec.limits.insert(key.into(), value.into());
                }
                "cpus" => {
                    let n = value
                        .parse::<f64>()
                        .ok()
                        .filter(|n| n.is_finite() && *n > 0.0)
                        .ok_or_else(|| bad_number(key, value, "a positive number, e.g. 0.5"))?;
                    spec.limits.insert(key.into(), n.into());
                }
                "pids" => {
                    let n = value
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad_number(key, value, "a whole number above 0"))?;
                    spec.limits.insert(key.into(), n.into());
                }
                _ => return Err(PoolSpecError::UnknownKey { key: key.into() }),
            }
        }
        if spec.size == 0 {
            return Err(PoolSpecError::NoSize);
        }
        spec.name = name.unwrap_or_else(|| spec.default_name());
        Ok(spec)
    }

    /// `backend/template/network`, the backend `default` when the server's.
    fn default_name(&self) -> String {
        let backend = self
            .backend
            .map_or_else(|| "default".to_string(), |b| b.to_string());
        let network = match self.network {
            NetworkMode::Proxy => "proxy",
            _ => "none",
        };
        format!(
            "{backend}/{}/{network}",
            self.template.as_deref().unwrap_or("base")
        )
    }
}

impl fmt::Display for PoolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (size {})", self.name, self.size)
    }
}

fn bad_number(key: &str, value: &str, want: &str) -> PoolSpecError {
    PoolSpecError::BadLimit {
        key: key.into(),
        value: value.into(),
        why: format!("give {want}"),
    }
}

fn parse_backend(value: &str) -> Result<BackendKind, PoolSpecError> {
    value
        .parse::<BackendKind>()
        .map_err(|e| PoolSpecError::BadBackend {
            value: value.into(),
            why: e.to_string(),
        })
}

fn parse_size_count(value: &str) -> Result<usize, PoolSpecError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_POOL_SIZE).contains(n))
        .ok_or_else(|| PoolSpecError::BadSize {
            value: value.into(),
        })
}

fn parse_name(value: &str) -> Result<String, PoolSpecError> {
    let ok = (1..=64).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if ok {
        Ok(value.to_string())
    } else {
        Err(PoolSpecError::BadName {
            value: value.into(),
        })
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
