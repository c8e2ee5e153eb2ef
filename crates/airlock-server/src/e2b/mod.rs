//! The E2B-compatible gateway: E2B's official SDKs drive airlock unchanged when pointed at
//! `airlock serve` (`E2B_API_URL` and `E2B_SANDBOX_URL` both set to the server's address).
//! The README says how to use it; the protocol itself is described in the design notes.
//!
//! One listener serves three protocols, told apart by headers:
//! - requests without `E2b-Sandbox-Id` go to the normal router: the native API and E2B's
//!   control plane (`/sandboxes`, `/v2/sandboxes`, [`control`]);
//! - requests with `E2b-Sandbox-Id` and `E2b-Sandbox-Port: 49983` go to envd (Connect services
//!   [`filesystem`], [`process`], [`watch`]; plain HTTP [`files`]);
//! - `E2b-Sandbox-Port: 49999` goes to the code interpreter ([`interpreter`]);
//! - `/files` without them (a signed URL carries no sandbox id) goes to envd as well;
//! - a `Host` of `{port}-{sandboxID}.{domain}` goes to that port of the box ([`ingress`]).
//!
//! Every sandbox is a session of the one [`SessionManager`](airlock_sessions::SessionManager)
//! the native API uses: a sandbox made through either API is visible and usable through both.

pub(crate) mod auth;
pub(crate) mod boxio;
pub(crate) mod boxstate;
pub(crate) mod connect;
pub(crate) mod control;
pub(crate) mod envd;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod filesystem;
pub(crate) mod ingress;
pub(crate) mod ingress_proxy;
pub(crate) mod interpreter;
pub(crate) mod metrics;
pub(crate) mod network;
pub(crate) mod network_update;
pub(crate) mod process;
pub(crate) mod procs;
pub(crate) mod secrets;
pub(crate) mod templates;
pub(crate) mod views;
pub(crate) mod watch;

use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
pub use error::E2bError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tower::ServiceExt;

/// envd's port in E2B.
pub const ENVD_PORT: &str = "49983";
/// The code interpreter's port in E2B.
pub const INTERPRETER_PORT: &str = "49999";
/// The envd version advertised: every feature the SDKs gate on a version up to it is served.
/// The gates (e2b 2.63 `envd/versions.py`, the JS SDK's `envd/versions.ts`): 0.1.4 recursive
/// watch, 0.3.0 command stdin, 0.4.0 default user, 0.5.2 `CloseStdin`, 0.5.7 octet-stream
/// upload, 0.6.2 file metadata (`X-Metadata-*` as `user.e2b.*` xattrs), 0.6.3 watch events
/// with `include_entry`. Not 0.6.4: it gates `allow_network_mounts` watches, and a box has no
/// network mounts to allow.
pub const ENVD_VERSION: &str = "0.6.3";

/// The network E2B boxes get when their create request sets no network option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefaultNetwork {
    /// Any public destination through the egress proxy (private, loopback and metadata
    /// addresses stay refused): what E2B users expect.
    #[default]
    Internet,
    /// No network at all.
    None,
}

/// What the gateway keeps beyond the native API's state.
pub struct E2bState {
    /// SHA-256 of the E2B-format API key.
    pub key_hash: String,
    /// Raw access tokens of live sandboxes, by sandbox id: needed to check signed file URLs,
    /// which are made from the raw token. Entries of ended sandboxes are dropped lazily.
    tokens: Mutex<HashMap<String, String>>,
    /// The network of boxes whose create request says nothing about it.
    pub default_network: DefaultNetwork,
    /// The gateway's state of each live sandbox, by sandbox id.
    boxes: Mutex<HashMap<String, Arc<boxstate::E2bBox>>>,
    /// The domain sandbox ports are served under (`{port}-{id}.{domain}`), checked by
    /// [`ingress::check_domain`]; `None`: no traffic into boxes' ports.
    pub domain: Option<String>,
    /// The stored secrets (`/secrets`), which network rules hand to boxes' proxies.
    pub vault: Arc<secrets::Vault>,
    /// `--e2b-map-host NAME=IP`: names every gateway box's proxy resolves without DNS.
    pub map_host: Vec<String>,
}

impl E2bState {
    pub fn new(key_hash: String, default_network: DefaultNetwork) -> E2bState {
        E2bState {
            key_hash,
            tokens: Mutex::new(HashMap::new()),
            default_network,
            boxes: Mutex::new(HashMap::new()),
            domain: None,
            vault: Arc::new(secrets::Vault::in_memory()),
            map_host: Vec::new(),
        }
    }

    /// Keeps secrets in `vault`.
    pub fn with_vault(mut self, vault: secrets::Vault) -> E2bState {
        self.vault = Arc::new(vault);
        self
    }

    /// Gateway boxes' proxies resolve these `NAME=IP` pairs without DNS.
    pub fn with_map_host(mut self, map_host: Vec<String>) -> E2bState {
        self.map_host = map_host;
        self
    }

    /// Serves sandbox ports under `domain` (already checked by [`ingress::check_domain`]).
    pub fn with_domain(mut self, domain: Option<String>) -> E2bState {
        self.domain = domain;
        self
    }

    /// The gateway's state of sandbox `id` (made on first use). Call it while the sandbox's
    /// handle is lent (inside `with_box`), so a kill cannot come between: the sandbox's end
    /// then always follows, and [`E2bState::forget_box`] drops the entry.
    pub(crate) fn box_state(&self, id: &str) -> Arc<boxstate::E2bBox> {
        let mut boxes = self.boxes.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(boxes.entry(id.to_string()).or_default())
    }

    /// Sandbox `id`'s state if the gateway holds one (without making it).
    pub(crate) fn existing_box(&self, id: &str) -> Option<Arc<boxstate::E2bBox>> {
        let boxes = self.boxes.lock().unwrap_or_else(PoisonError::into_inner);
        boxes.get(id).cloned()
    }

    /// The ports rule recorded for sandbox `id`, if any (without making its state).
    pub(crate) fn ingress_of(&self, id: &str) -> Option<ingress::IngressRule> {
        let boxes = self.boxes.lock().unwrap_or_else(PoisonError::into_inner);
        boxes.get(id).and_then(|b| b.ingress.get().cloned())
    }

    /// Whether the gateway holds state for sandbox `id`.
    #[cfg(test)]
    pub(crate) fn has_box(&self, id: &str) -> bool {
        self.boxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// Drops the gateway's state of sandbox `id` (it ended): its processes' output buffers and
    /// its watchers go with it.
    pub(crate) fn forget_box(&self, id: &str) {
        self.boxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Remembers sandbox `id`'s raw access token (any sandbox, whichever API made it).
    pub fn remember_token(&self, id: &str, token: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), token.to_string());
    }

    /// Forgets a sandbox's token (it ended).
    pub fn forget_token(&self, id: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Sandbox `id`'s token, if it is known.
    pub fn token_of(&self, id: &str) -> Option<String> {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Every known (sandbox id, token) pair.
    pub fn tokens_snapshot(&self) -> Vec<(String, String)> {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Drops the tokens of sandboxes for which `live` answers false.
    pub fn retain_live(&self, live: impl Fn(&str) -> bool) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|id, _| live(id));
    }
}

/// The sandbox id a request names in `E2b-Sandbox-Id`, if any.
pub fn sandbox_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("e2b-sandbox-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// The sandbox a request to envd names, or the error saying it names none.
pub fn named_sandbox(headers: &HeaderMap) -> Result<String, E2bError> {
    sandbox_id(headers).map(str::to_string).ok_or_else(|| {
        E2bError::InvalidArgument(
            "the request names no sandbox: send the E2b-Sandbox-Id header".into(),
        )
    })
}

/// Whether `id` can be a sandbox id (E2B's `[a-z0-9]`, plus `_` for native `sb_…` ids).
pub fn valid_sandbox_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The routers requests are dispatched to.
#[derive(Clone)]
pub struct Gateway {
    envd: Router,
    interpreter: Router,
    state: AppState,
}

impl Gateway {
    pub fn new(state: &AppState) -> Gateway {
        Gateway {
            envd: envd::router(state.clone()),
            interpreter: interpreter::router(state.clone()),
            state: state.clone(),
        }
    }
}

/// The sandbox port a request's `Host` names under the served domain, if any.
fn port_host(state: &AppState, req: &Request) -> Option<ingress::PortHost> {
    let domain = state.e2b.domain.as_deref()?;
    let host = req.headers().get(axum::http::header::HOST)?.to_str().ok()?;
    ingress::parse_host(host, domain)
}

/// Middleware in front of the normal router: sends sandbox traffic to envd or the code
/// interpreter by the `E2b-Sandbox-*` headers, or by a `{port}-{id}.{domain}` host (other
/// ports to the box, [`ingress_proxy`]); everything else goes on.
pub async fn dispatch(State(gateway): State<Gateway>, mut req: Request, next: Next) -> Response {
    if let Some(target) = port_host(&gateway.state, &req) {
        let named = |v: &str| axum::http::HeaderValue::from_str(v).ok();
        match target.port.to_string().as_str() {
            port @ (ENVD_PORT | INTERPRETER_PORT) => {
                // envd and the interpreter by name, as E2B's edge routes them.
                if let (Some(id), Some(port)) = (named(&target.sandbox), named(port)) {
                    req.headers_mut().insert("e2b-sandbox-id", id);
                    req.headers_mut().insert("e2b-sandbox-port", port);
                }
            }
            _ => return ingress_proxy::relay(gateway.state.clone(), target, req).await,
        }
    }
    let Some(id) = sandbox_id(req.headers()) else {
        // `/files` is envd's even without the headers: a signed URL carries none, and one
        // with neither signature nor token gets envd's own refusal.
        if req.uri().path() == "/files" {
            return forward(gateway.envd, req).await;
        }
        return next.run(req).await;
    };
    if !valid_sandbox_id(id) {
        return E2bError::InvalidArgument(
            "E2b-Sandbox-Id must be a sandbox id (lowercase letters, digits, `_`)".into(),
        )
        .rest_response();
    }
    let port = req
        .headers()
        .get("e2b-sandbox-port")
        .and_then(|v| v.to_str().ok())
        .unwrap_or(ENVD_PORT)
        .trim()
        .to_string();
    match port.as_str() {
        ENVD_PORT => forward(gateway.envd, req).await,
        INTERPRETER_PORT => forward(gateway.interpreter, req).await,
        other => {
            let msg = format!("port {other} of the sandbox is not served: airlock serves envd on {ENVD_PORT} and the code interpreter on {INTERPRETER_PORT}");
            (
                StatusCode::BAD_GATEWAY,
                axum::Json(serde_json::json!({"code": 502, "message": msg})),
            )
                .into_response()
        }
    }
}

async fn forward(router: Router, req: Request) -> Response {
    match router.oneshot(req).await {
        Ok(res) => res,
        Err(never) => match never {},
    }
}

/// Whether `path` belongs to airlock's native API (everything else is E2B's API).
pub fn is_native_path(path: &str) -> bool {
    path == "/v1/sandboxes" || path.starts_with("/v1/sandboxes/") || path == "/openapi.json"
}

/// The answer to an E2B API route airlock does not serve (volumes, secrets, template deletion, …): 501
/// in E2B's shape (`{"code", "message"}`), which the SDKs turn into their own
/// error with the message, rather than a shape they cannot read.
pub fn unserved(method: &axum::http::Method, path: &str) -> Response {
    E2bError::Unimplemented(format!(
        "{method} {path} is not supported by airlock's E2B gateway (it serves sandbox create, \
         connect, list, info, timeout, kill, metrics, pause, resume, fork, snapshots, network \
         updates, secrets, and template builds, aliases and tags; see the README's E2B section for what is not supported and why)"
    ))
    .rest_response()
}

/// The control-plane routes, merged into the normal router.
pub fn control_routes() -> Router<AppState> {
    control::routes()
        .merge(templates::routes())
        .merge(secrets::routes::routes())
}
