//! The JSON bodies the API takes. Unknown fields are refused, so a typo is an error rather than
//! a silently ignored setting; each body's `check` applies the rules of [`crate::checks`] that
//! JSON's shape cannot (ranges, path forms, names), naming the field that breaks one.

use crate::checks::{self, FieldError};
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
    /// The kind of box (default: the server's `--backend`); see [`CreateRequest::backend`].
    pub backend: Option<String>,
    /// What reaching the timeout does: `kill` (the default) or `pause`.
    pub on_timeout: Option<String>,
    /// Pause the box after this many seconds without a request or a running command (0:
    /// never; absent: the server's `--idle-pause`).
    pub idle_pause: Option<i64>,
    /// Whether a request on the paused box resumes it first (default true).
    pub auto_resume: Option<bool>,
    /// Secrets the box's egress proxy adds to requests to their hosts; the box sees a
    /// placeholder in the variable of each name. Needs `policy.network.mode = "proxy"`.
    #[serde(default)]
    pub secrets: BTreeMap<String, RequestSecret>,
}

/// `POST /v1/sandboxes/{id}/pause`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    /// Keep the box's memory so that its processes continue where they were (default true);
    /// `false` keeps only its files and gives its memory back (processes restart on resume).
    pub memory: Option<bool>,
}

/// `POST /v1/sandboxes/{id}/snapshots`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRequest {
    /// A label to find it by (at most 128 bytes).
    pub name: Option<String>,
}

/// `POST /v1/sandboxes/{id}/fork`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// How many new boxes (1 to 16, default 1).
    pub count: Option<u32>,
    /// Fork from this snapshot of the sandbox instead of taking a new one.
    pub snapshot: Option<String>,
    /// The new boxes' life in seconds (default: the server's default).
    pub timeout: Option<u64>,
}

/// The most boxes one fork makes.
pub const MAX_FORK: u32 = 16;

impl ForkRequest {
    /// `count` in 1..=16 (default 1), `timeout` in range; returns the count.
    pub fn check(&self) -> Result<u32, FieldError> {
        if let Some(t) = self.timeout {
            checks::sandbox_timeout_ms("timeout", t)?;
        }
        match self.count.unwrap_or(1) {
            n @ 1..=MAX_FORK => Ok(n),
            n => Err(FieldError::new(
                "count",
                format!("give between 1 and {MAX_FORK} boxes, not {n}"),
            )),
        }
    }
}

impl SnapshotRequest {
    pub fn check(&self) -> Result<(), FieldError> {
        match &self.name {
            Some(n) if n.is_empty() || n.len() > 128 => Err(FieldError::new(
                "name",
                "give 1 to 128 bytes, or leave it out".to_string(),
            )),
            _ => Ok(()),
        }
    }
}

/// One secret of a create request. `Debug` never shows the value.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSecret {
    pub value: String,
    /// `NAME[:PORT]` or `*.NAME[:PORT]`, port 443 when none.
    pub hosts: Vec<String>,
    /// Also replace the placeholder in request bodies.
    #[serde(default)]
    pub body: bool,
}

impl std::fmt::Debug for RequestSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestSecret")
            .field("hosts", &self.hosts)
            .field("body", &self.body)
            .finish_non_exhaustive()
    }
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
    /// `user` (the default) or `root` (the box's own root, where it has one).
    pub user: Option<airlock_protocol::ExecUser>,
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

impl CreateRequest {
    /// The rules of the fields that are not the policy (`template`, `timeout`, `metadata`,
    /// `env`); the policy is checked as it is resolved (`crate::template::resolve_policy`).
    pub fn check(&self) -> Result<(), FieldError> {
        if let Some(t) = self.timeout {
            checks::sandbox_timeout_ms("timeout", t)?;
        }
        checks::metadata("metadata", &self.metadata)?;
        self.backend()?;
        self.on_timeout()?;
        match self.idle_pause {
            Some(s) if s < 0 => {
                return Err(FieldError::new(
                    "idle_pause",
                    format!("give seconds from 0 (never pause) to 86400, not {s}"),
                ))
            }
            Some(s) if s > 0 => {
                checks::sandbox_timeout_ms("idle_pause", s.unsigned_abs())?;
            }
            _ => {}
        }
        checks::box_env("env", &self.env)
    }

    /// `on_timeout`: what reaching the timeout does.
    pub fn on_timeout(&self) -> Result<airlock_sessions::OnTimeout, FieldError> {
        match self.on_timeout.as_deref() {
            None | Some("kill") => Ok(airlock_sessions::OnTimeout::Kill),
            Some("pause") => Ok(airlock_sessions::OnTimeout::Pause),
            Some(other) => Err(FieldError::new(
                "on_timeout",
                format!("use \"kill\" or \"pause\", not {other:?}"),
            )),
        }
    }

    /// The lifecycle settings of the session: on-timeout, idle pause, auto-resume.
    pub fn lifecycle(&self, spec: &mut airlock_sessions::SessionSpec) -> Result<(), FieldError> {
        spec.on_timeout = self.on_timeout()?;
        spec.idle_pause_ms = self.idle_pause.map(|s| s.saturating_mul(1000));
        spec.auto_resume = self.auto_resume.unwrap_or(true);
        Ok(())
    }

    /// `backend`: a kind of box, if the request names one.
    pub fn backend(&self) -> Result<Option<airlock_policy::BackendKind>, FieldError> {
        self.backend
            .as_deref()
            .map(|b| b.parse().map_err(|e: String| FieldError::new("backend", e)))
            .transpose()
    }
}

impl TimeoutRequest {
    /// `timeout`: whole seconds, 1 to one day; returns milliseconds.
    pub fn check(&self) -> Result<i64, FieldError> {
        checks::sandbox_timeout_ms("timeout", self.timeout)
    }
}

impl ExecRequest {
    /// `cmd` (non-empty, no NUL), `env`, `cwd` (absolute) and `timeout`; returns the timeout.
    pub fn check(&self) -> Result<Option<std::time::Duration>, FieldError> {
        checks::argv("cmd", &self.cmd)?;
        checks::run_env("env", &self.env)?;
        if let Some(cwd) = &self.cwd {
            checks::absolute_path("cwd", cwd)?;
        }
        checks::run_timeout("timeout", self.timeout)
    }
}

impl CodeRequest {
    /// `env` and `timeout`; returns the timeout.
    pub fn check(&self) -> Result<Option<std::time::Duration>, FieldError> {
        checks::run_env("env", &self.env)?;
        checks::run_timeout("timeout", self.timeout)
    }
}

impl ContextRequest {
    /// `cwd`: absolute.
    pub fn check(&self) -> Result<(), FieldError> {
        match &self.cwd {
            Some(cwd) => checks::absolute_path("cwd", cwd),
            None => Ok(()),
        }
    }
}

/// Parses a JSON body (an empty body counts as `{}` when `empty_ok`). The body must be a JSON
/// object; a whole number written with a fraction (`300.0`) counts as that integer, as JSON
/// Schema (and so the OpenAPI document) says it is.
pub fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    empty_ok: bool,
) -> Result<T, crate::ApiError> {
    // JSON's whitespace only (space, tab, LF, CR): Rust's ASCII whitespace also has form
    // feed, and a body of one form feed is not JSON.
    let json_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let body = if empty_ok && body.iter().all(json_space) {
        &b"{}"[..]
    } else {
        body
    };
    let mut value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| crate::ApiError::bad_json(&e))?;
    if !value.is_object() {
        return Err(crate::ApiError::Invalid(
            "the request body must be a JSON object ({...}); see GET /openapi.json".into(),
        ));
    }
    whole_numbers_as_integers(&mut value);
    serde_json::from_value(value).map_err(|e| crate::ApiError::bad_json(&e))
}

/// Rewrites every float with no fraction that fits a `u64` or `i64` as that integer.
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::{Number, Value};
    match value {
        Value::Number(n) => {
            let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0) else {
                return;
            };
            // Both bounds are exact powers of two as f64, so the casts below are exact.
            if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                *n = Number::from(f as u64);
            } else if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                *n = Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}
