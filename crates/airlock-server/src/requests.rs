//! The JSON bodies the API takes. Unknown fields are refused, so a typo is an error rather than
//! a silently ignored setting.

use airlock_policy::{LimitsSection, NetworkSection};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `POST /v1/sandboxes`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// `base` (default) or `user`.
    pub template: Option<String>,
    /// The box's life in seconds (300 by default).
    pub timeout: Option<u64>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Added to the box's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub policy: Option<RequestPolicy>,
    /// The kind of box (default: the server's `--backend`).
    pub backend: Option<airlock_policy::BackendKind>,
}

/// The parts of a policy file a server client may set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestPolicy {
    pub network: Option<NetworkSection>,
    pub limits: Option<LimitsSection>,
    /// Refused: server boxes get no host paths.
    pub filesystem: Option<serde_json::Value>,
}

/// `POST /v1/sandboxes/{id}/exec`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecRequest {
    pub cmd: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    /// Text written to the command's stdin, then closed.
    pub stdin: Option<String>,
    /// Seconds; the command is killed past it.
    pub timeout: Option<f64>,
}

/// `POST /v1/sandboxes/{id}/code`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeRequest {
    pub code: String,
    /// `python` (default), `js` or `bash`.
    pub language: Option<String>,
    /// The context to run in; the language's default context (`python`, `js`, `bash`) if absent.
    pub context: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds; the execution is interrupted past it (the context keeps its state).
    pub timeout: Option<f64>,
}

/// `POST /v1/sandboxes/{id}/contexts`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// `python` (default), `js` or `bash`.
    pub language: Option<String>,
    pub cwd: Option<String>,
}

/// `POST /v1/sandboxes/{id}/timeout`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutRequest {
    pub timeout: u64,
}

/// Parses a JSON body (an empty body counts as `{}` when `empty_ok`).
pub fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    empty_ok: bool,
) -> Result<T, crate::ApiError> {
    let body = if empty_ok && body.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| crate::ApiError::bad_json(&e))
}
