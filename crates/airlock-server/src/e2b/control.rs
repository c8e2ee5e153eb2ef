//! E2B's control plane (`X-API-KEY`): create, connect (resuming a paused sandbox), get, list,
//! kill, extend, pause, resume, fork, snapshots, metrics — on the same session manager and store
//! as the native API. E2B's pause keeps memory wherever the box's kind can (see
//! [`crate::factory`] for the mapping).

use super::auth::require_api_key;
use super::error::E2bError;
use super::network::{network_section, NetworkOptions};
use super::views;
use crate::auth::Caller;
use crate::observer::lock;
use crate::requests::{CreateRequest, RequestPolicy};
use crate::secrets::{new_token, random_hex};
use crate::service::sandboxes::{audit, check_metadata, create_session, timeout_ms};
use crate::state::AppState;
use crate::template::resolve_policy;
use airlock_policy::{BackendKind, INSIDE_HOME};
use airlock_runtime::backend::Template;
use airlock_sessions::{SessionSpec, SessionState};
use airlock_store::{SandboxFilter, SandboxRecord, SandboxState, MAX_PAGE};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The E2B templates airlock offers: each is a box with the user's home as working directory,
/// Python, Node and Bash from the host's read-only system directories, and the code
/// interpreter on demand.
pub const TEMPLATES: &[&str] = &["base", "code-interpreter-v1"];
/// E2B's default sandbox life, in seconds.
pub const DEFAULT_TIMEOUT_S: u64 = 300;
/// How long a create waits for a queued box to start.
const START_WAIT: Duration = Duration::from_secs(120);
/// The most sandboxes one list page holds.
const MAX_LIST_LIMIT: usize = 100;

/// The control-plane routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/sandboxes", post(create).get(list_v1))
        .route("/v2/sandboxes", post(create).get(list_v2))
        .route("/sandboxes/{id}", get(get_one).delete(kill))
        .route("/sandboxes/{id}/connect", post(connect))
        .route("/v2/sandboxes/{id}/connect", post(connect))
        .route("/sandboxes/{id}/timeout", post(set_timeout))
        .route("/sandboxes/{id}/pause", post(pause))
        .route("/sandboxes/{id}/resume", post(resume))
        .route("/sandboxes/{id}/fork", post(fork))
        .route("/sandboxes/{id}/snapshots", post(snapshot))
        .route("/sandboxes/{id}/metrics", get(metrics))
        .route(
            "/sandboxes/{id}/network",
            axum::routing::put(super::network_update::update),
        )
}

/// `POST /sandboxes` and `POST /v2/sandboxes` bodies. Fields airlock cannot honour are
/// refused when set to something other than their default.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSandbox {
    #[serde(rename = "templateID")]
    pub template_id: Option<String>,
    pub timeout: Option<i64>,
    pub metadata: Option<BTreeMap<String, String>>,
    pub env_vars: Option<BTreeMap<String, String>>,
    #[serde(rename = "allow_internet_access")]
    pub allow_internet_access: Option<bool>,
    pub network: Option<NetworkOptions>,
    pub auto_pause: Option<bool>,
    pub auto_pause_memory: Option<bool>,
    pub auto_resume: Option<AutoResume>,
    pub volume_mounts: Option<Vec<Value>>,
    pub mcp: Option<Value>,
}

/// `autoResume` of a create request.
#[derive(Debug, Default, Deserialize)]
pub struct AutoResume {
    pub enabled: bool,
}

/// The template's name, working directory and root: a stored template (by name, or an alias
/// such as `code-interpreter-v1` the server was started with), else one of [`TEMPLATES`] on the
/// host's system dirs; or not_found naming the ones that exist.
pub fn template(
    name: Option<&str>,
    catalog: &crate::template_catalog::TemplateCatalog,
) -> Result<(String, &'static str, Template), E2bError> {
    let name = name.unwrap_or("base");
    match catalog.lookup(name) {
        Ok(Some(t)) => return Ok((name.to_string(), INSIDE_HOME, t)),
        Ok(None) => {}
        Err(why) => return Err(E2bError::NotFound(why)),
    }
    if TEMPLATES.contains(&name) {
        return Ok((name.to_string(), INSIDE_HOME, Template::Host));
    }
    Err(E2bError::NotFound(format!(
        "template {name:?} not found; the templates that exist are: {}",
        catalog.known(TEMPLATES).join(", ")
    )))
}

/// The native create request and session spec a `NewSandbox` amounts to (no side effect).
pub fn plan(
    req: NewSandbox,
    default_network: super::DefaultNetwork,
    backend: BackendKind,
    catalog: &crate::template_catalog::TemplateCatalog,
    map_host: &[String],
) -> Result<SessionSpec, E2bError> {
    let (template, cwd, root) = template(req.template_id.as_deref(), catalog)?;
    let auto_pause = req.auto_pause == Some(true);
    if auto_pause && req.auto_pause_memory == Some(false) {
        return Err(E2bError::InvalidArgument(
            "autoPauseMemory: false is not supported: airlock's auto-pause keeps the box's memory wherever its kind can; leave it out".into(),
        ));
    }
    let auto_resume = req.auto_resume.as_ref().is_some_and(|a| a.enabled);
    if req.volume_mounts.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(E2bError::InvalidArgument(
            "volumeMounts are not supported by airlock; copy files in with sandbox.files.write"
                .into(),
        ));
    }
    if req.mcp.as_ref().is_some_and(|m| !m.is_null()) {
        return Err(E2bError::InvalidArgument(
            "mcp is not supported by airlock; leave it out".into(),
        ));
    }
    let seconds = match req.timeout {
        None => DEFAULT_TIMEOUT_S,
        Some(t) if t > 0 => t as u64,
        Some(t) => {
            return Err(E2bError::InvalidArgument(format!(
                "timeout {t} must be a positive number of seconds"
            )))
        }
    };
    let timeout_ms = timeout_ms(seconds).map_err(E2bError::from)?;
    let metadata = req.metadata.unwrap_or_default();
    check_metadata(&metadata).map_err(E2bError::from)?;
    let mut section = network_section(
        req.allow_internet_access,
        req.network.as_ref(),
        default_network,
    )?;
    let rules = req
        .network
        .as_ref()
        .and_then(|n| n.rules.as_ref())
        .filter(|r| !r.is_null() && r.as_object().is_none_or(|m| !m.is_empty()))
        .map(super::secrets::rules::bindings)
        .transpose()?
        .unwrap_or_default();
    if section.mode == Some(airlock_policy::NetworkMode::Proxy) {
        section.map_host.extend(map_host.iter().cloned());
    } else if !rules.is_empty() {
        return Err(E2bError::InvalidArgument(
            "network.rules need network access: the sandbox is created without any (allow_internet_access false, or everything denied); allow the rules' hosts in network.allowOut".into(),
        ));
    }
    let mut native = CreateRequest {
        template: None,
        timeout: Some(seconds),
        metadata: BTreeMap::new(),
        env: req.env_vars.unwrap_or_default(),
        policy: Some(RequestPolicy {
            network: Some(section),
            limits: None,
            filesystem: None,
        }),
        backend: None,
        on_timeout: None,
        idle_pause: None,
        auto_resume: None,
        // E2B's secrets come by network rules (added below, without their values).
        secrets: BTreeMap::new(),
    };
    let mut policy = resolve_policy(&mut native, cwd, backend).map_err(E2bError::from)?;
    crate::template::apply(&mut policy, &root).map_err(E2bError::from)?;
    // The rules' secrets: bound to their hosts without allowing them (E2B: allowOut does).
    policy.secrets.extend(rules);
    let payload = serde_json::to_value(&policy)
        .map_err(|e| E2bError::Internal(format!("the policy cannot be encoded: {e}")))?;
    let mut spec = SessionSpec::new(template, payload);
    spec.metadata = metadata;
    spec.timeout_ms = Some(timeout_ms);
    spec.on_timeout = if auto_pause {
        airlock_sessions::OnTimeout::Pause
    } else {
        airlock_sessions::OnTimeout::Kill
    };
    // E2B's default: a paused sandbox resumes only on connect, unless autoResume is on.
    spec.auto_resume = auto_resume;
    Ok(spec)
}

/// A new E2B-style sandbox id: 20 characters of `[0-9a-f]` (E2B requires `^[a-z0-9]+$`).
fn new_id() -> Result<String, E2bError> {
    random_hex(10)
        .map_err(|e| E2bError::Internal(format!("no random bytes for the sandbox's id: {e}")))
}

fn respond(result: Result<Response, E2bError>) -> Response {
    result.unwrap_or_else(|e| e.rest_response())
}

async fn blocking<R: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(AppState) -> Result<R, E2bError> + Send + 'static,
) -> Result<R, E2bError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || f(state))
        .await
        .map_err(|_| {
            E2bError::Internal(
                "the request's worker failed; retry, and report it if it persists".into(),
            )
        })?
}

/// Parses a create body and plans its session with the default network, and its ports rule
/// (for fuzzing).
pub fn plan_body(body: &[u8]) -> Result<SessionSpec, E2bError> {
    let req: NewSandbox = parse_body(body)?;
    super::ingress::rule_of(req.network.as_ref())?;
    plan(
        req,
        super::DefaultNetwork::default(),
        BackendKind::default(),
        &crate::template_catalog::TemplateCatalog::empty(),
        &[],
    )
}

fn parse_body<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, E2bError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        E2bError::InvalidArgument(format!("the request body is not valid for this route: {e}"))
    })
}

/// A live sandbox's record, or not_found (unknown, or ended: E2B forgets ended sandboxes).
pub(crate) fn live_record(state: &AppState, id: &str) -> Result<SandboxRecord, E2bError> {
    let not_found = || {
        E2bError::NotFound(format!(
            "sandbox {id} not found (it ended or never existed)"
        ))
    };
    // The manager knows first that a box ended (the store follows a moment later): ask it too,
    // so `connect` right after `is_running()` turned false is a 404, not a stale success.
    if state
        .manager
        .get(id)
        .is_some_and(|info| info.state.is_terminal())
    {
        return Err(not_found());
    }
    let rec = lock(&state.store)
        .get_sandbox(id)
        .map_err(|e| E2bError::Internal(e.to_string()))?;
    match rec {
        Some(rec) if views::e2b_state(rec.state).is_some() => Ok(rec),
        _ => Err(not_found()),
    }
}

fn started_ms(state: &AppState, id: &str) -> Option<i64> {
    state.manager.get(id).and_then(|i| i.started_ms)
}

async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    respond(create_inner(state, headers, body).await)
}

async fn create_inner(
    state: AppState,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, E2bError> {
    require_api_key(&state.e2b, &headers)?;
    let req: NewSandbox = parse_body(&body)?;
    let ingress = super::ingress::rule_of(req.network.as_ref())?;
    let spec = plan(
        req,
        state.e2b.default_network,
        state.default_backend,
        &state.templates,
        &state.e2b.map_host,
    )?;
    let values = rule_values(&state, &spec)?;
    state
        .backends
        .usable(state.default_backend)
        .map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
    let id = new_id()?;
    let token = new_token()
        .map_err(|e| E2bError::Internal(format!("no random bytes for the sandbox's token: {e}")))?;
    let shown = blocking(&state, move |state| {
        state.held_secrets.hold(&id, values);
        if let Err(e) = create_session(&state, &id, &token, spec, &Caller::E2bKey) {
            state.held_secrets.forget(&id);
            return Err(E2bError::from(e));
        }
        let info = state.manager.wait_started(&id, START_WAIT).map_err(|e| E2bError::from_manager(&id, e))?;
        match info.state {
            SessionState::Running => {}
            SessionState::Queued | SessionState::Starting => {
                let _ = state.manager.kill(&id);
                return Err(E2bError::ResourceExhausted(format!(
                    "sandbox {id} did not get a slot within {} s; every slot is busy — kill a sandbox or retry later",
                    START_WAIT.as_secs()
                )));
            }
            other => {
                return Err(E2bError::Internal(format!("sandbox {id} could not start ({other}): {}", info.reason.unwrap_or_default())));
            }
        }
        // Recorded under the lent handle, so a kill cannot come between (see `box_state`).
        super::boxio::with_box_blocking(&state, &id, |_| {
            let _ = state.e2b.box_state(&id).ingress.set(ingress);
            Ok(())
        })?;
        let rec = live_record(&state, &id)?;
        Ok(views::sandbox(&rec, Some(&token), state.e2b.domain.as_deref()))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(shown)).into_response())
}

/// The current values of the stored secrets the sandbox's network rules name; a name no
/// secret has is refused.
fn rule_values(
    state: &AppState,
    spec: &SessionSpec,
) -> Result<airlock_policy::SecretValues, E2bError> {
    let mut pairs = Vec::new();
    let bindings = spec.payload["secrets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for b in bindings {
        let Some(name) = b["name"].as_str() else {
            continue;
        };
        let value = state.e2b.vault.value_of(name).ok_or_else(|| {
            E2bError::InvalidArgument(format!(
                "network.rules name the secret {name:?}, which does not exist; create it first (Secret.create)"
            ))
        })?;
        pairs.push((name.to_string(), value));
    }
    Ok(airlock_policy::SecretValues::from_pairs(pairs))
}

#[derive(Debug, Default, Deserialize)]
struct ConnectBody {
    timeout: Option<i64>,
}

async fn connect(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: ConnectBody = parse_body(&body)?;
            let (shown, resumed) = blocking(&state, move |state| {
                let mut rec = live_record(&state, &id)?;
                // A paused sandbox is resumed (201); its deadline then counts from now.
                let resumed = matches!(rec.state, SandboxState::Paused | SandboxState::Resuming);
                if resumed {
                    resume_now(&state, &id)?;
                    rec = live_record(&state, &id)?;
                }
                if let Some(t) = req.timeout.filter(|t| *t > 0) {
                    extend_to(&state, &id, &rec, t as u64)?;
                }
                let token = state.e2b.token_of(&id);
                Ok((
                    views::sandbox(&rec, token.as_deref(), state.e2b.domain.as_deref()),
                    resumed,
                ))
            })
            .await?;
            let status = if resumed {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok((status, Json(shown)).into_response())
        }
        .await,
    )
}

/// Extends the sandbox's life to `seconds` from now if that is later than its deadline.
fn extend_to(
    state: &AppState,
    id: &str,
    rec: &SandboxRecord,
    seconds: u64,
) -> Result<(), E2bError> {
    let ms = timeout_ms(seconds).map_err(E2bError::from)?;
    let now = now_ms();
    if now + ms > rec.deadline_ms {
        state
            .manager
            .set_timeout(id, ms)
            .map_err(|e| control_error(id, e))?;
    }
    Ok(())
}

/// A manager refusal as the control plane says it: a sandbox that ended between the lookup and
/// now is a 404, as E2B answers for a sandbox that is gone.
fn control_error(id: &str, e: airlock_sessions::ManagerError) -> E2bError {
    match E2bError::from_manager(id, e) {
        E2bError::SandboxGone(_) => E2bError::NotFound(format!(
            "sandbox {id} not found (it ended or never existed)"
        )),
        other => other,
    }
}

fn now_ms() -> i64 {
    use airlock_sessions::Clock;
    airlock_sessions::SystemClock.now_ms()
}

async fn get_one(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let shown = blocking(&state, move |state| {
                let rec = live_record(&state, &id)?;
                let token = state.e2b.token_of(&id);
                let mut shown = views::detail(
                    &rec,
                    started_ms(&state, &id),
                    token.as_deref(),
                    state.e2b.domain.as_deref(),
                );
                if let Some(spec) = state.manager.spec(&id) {
                    shown["lifecycle"] = serde_json::json!({
                        "autoResume": spec.auto_resume,
                        "onTimeout": match spec.on_timeout {
                            airlock_sessions::OnTimeout::Pause => "pause",
                            airlock_sessions::OnTimeout::Kill => "kill",
                        },
                    });
                }
                // Who may reach its ports (what the gateway enforces; unknown: the token).
                let rule = state.e2b.ingress_of(&id).unwrap_or_default();
                shown["network"]["allowPublicTraffic"] = serde_json::json!(rule.public);
                if let Some(mask) = rule.mask_host {
                    shown["network"]["maskRequestHost"] = serde_json::json!(mask);
                }
                Ok(shown)
            })
            .await?;
            Ok(Json(shown).into_response())
        }
        .await,
    )
}

/// What a list asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub metadata: BTreeMap<String, String>,
    /// `running` and/or `paused`; both when empty.
    pub states: Vec<String>,
    pub limit: usize,
    /// Entries to skip (the previous page's `X-Next-Token`).
    pub offset: usize,
    /// Oldest start first (`order=asc`); newest first otherwise (the default, `desc`).
    pub oldest_first: bool,
    /// Only sandboxes started at or after this time (ms since the epoch).
    pub started_after_ms: Option<i64>,
    /// Only sandboxes of this template (its id or name, or an alias the server maps to it).
    pub template: Option<String>,
}

/// Parses `metadata` (url-encoded `k=v&…`), `state` (comma-separated or repeated), `order`
/// (`asc`/`desc` by start time), `startedAfter` (RFC 3339), `template`, `limit` and
/// `nextToken`; other parameters are accepted and ignored.
pub fn list_query(raw: &str) -> Result<ListQuery, E2bError> {
    let bad = |what: &str| E2bError::InvalidArgument(format!("the query's {what} is malformed"));
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw).map_err(|_| bad("encoding"))?;
    let mut q = ListQuery {
        limit: MAX_LIST_LIMIT,
        ..ListQuery::default()
    };
    for (k, v) in pairs {
        match k.as_str() {
            "metadata" => {
                let inner: Vec<(String, String)> =
                    serde_urlencoded::from_str(&v).map_err(|_| bad("metadata"))?;
                q.metadata.extend(inner);
            }
            "state" => {
                for s in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if s != "running" && s != "paused" {
                        return Err(E2bError::InvalidArgument(format!(
                            "unknown state {s:?}; use running or paused"
                        )));
                    }
                    q.states.push(s.to_string());
                }
            }
            "limit" => {
                let n: usize = v.parse().map_err(|_| bad("limit"))?;
                if n == 0 {
                    return Err(E2bError::InvalidArgument("limit must be at least 1".into()));
                }
                q.limit = n.min(MAX_LIST_LIMIT);
            }
            "nextToken" => q.offset = v.parse().map_err(|_| bad("nextToken"))?,
            "order" => {
                q.oldest_first = match v.to_ascii_lowercase().as_str() {
                    "asc" => true,
                    "desc" => false,
                    other => {
                        return Err(E2bError::InvalidArgument(format!(
                            "unknown order {other:?}; use asc or desc"
                        )))
                    }
                }
            }
            "startedAfter" => {
                q.started_after_ms = Some(views::parse_rfc3339(&v).ok_or_else(|| {
                    E2bError::InvalidArgument(format!(
                        "startedAfter {v:?} is not an RFC 3339 time (2024-01-02T03:04:05Z)"
                    ))
                })?)
            }
            "template" if !v.is_empty() => q.template = Some(v),
            _ => {}
        }
    }
    Ok(q)
}

/// Live sandboxes matching `q`, newest first, and the token of the next page if any.
fn list_matching(
    state: &AppState,
    q: &ListQuery,
    paginate: bool,
) -> Result<(Vec<Value>, Option<String>), E2bError> {
    let mut filter = SandboxFilter {
        metadata: q.metadata.clone(),
        limit: MAX_PAGE,
        ..SandboxFilter::default()
    };
    let want_running = q.states.is_empty() || q.states.iter().any(|s| s == "running");
    let want_paused = q.states.is_empty() || q.states.iter().any(|s| s == "paused");
    if want_running {
        filter.states.extend([
            SandboxState::Queued,
            SandboxState::Starting,
            SandboxState::Running,
        ]);
    }
    if want_paused {
        filter.states.push(SandboxState::Paused);
    }
    let recs = lock(&state.store)
        .list_sandboxes(&filter)
        .map_err(|e| E2bError::Internal(e.to_string()))?;
    let catalog = &state.templates;
    let of_template = |r: &SandboxRecord| {
        q.template.as_deref().is_none_or(|t| {
            r.template == t || catalog.canonical(&r.template) == catalog.canonical(t)
        })
    };
    let mut found: Vec<(i64, Value)> = recs
        .iter()
        .filter(|r| of_template(r))
        .filter_map(|r| {
            let started = started_ms(state, &r.id).unwrap_or(r.created_ms);
            let wanted = q.started_after_ms.is_none_or(|after| started >= after);
            wanted.then(|| (started, views::listed(r, Some(started))))
        })
        .collect();
    // The order holds across pages (the SDKs say so): sort the whole result, then page it.
    found.sort_by_key(|(started, _)| *started);
    if !q.oldest_first {
        found.reverse();
    }
    let all: Vec<Value> = found.into_iter().map(|(_, v)| v).collect();
    if !paginate {
        return Ok((all, None));
    }
    let page: Vec<Value> = all.iter().skip(q.offset).take(q.limit).cloned().collect();
    let next = q.offset + page.len();
    Ok((page, (next < all.len()).then(|| next.to_string())))
}

async fn list_v2(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let q = list_query(raw.as_deref().unwrap_or(""))?;
            let (page, next) =
                blocking(&state, move |state| list_matching(&state, &q, true)).await?;
            let mut res = Json(page).into_response();
            if let Some(next) = next.and_then(|n| HeaderValue::from_str(&n).ok()) {
                res.headers_mut().insert("x-next-token", next);
            }
            Ok(res)
        }
        .await,
    )
}

async fn list_v1(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let q = list_query(raw.as_deref().unwrap_or(""))?;
            let (all, _) = blocking(&state, move |state| list_matching(&state, &q, false)).await?;
            Ok(Json(all).into_response())
        }
        .await,
    )
}

async fn kill(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            blocking(&state, move |state| {
                live_record(&state, &id)?;
                state.manager.kill(&id).map_err(|_| {
                    E2bError::NotFound(format!(
                        "sandbox {id} not found (it ended or never existed)"
                    ))
                })?;
                state.e2b.forget_token(&id);
                audit(&state, &id, "kill", &Caller::E2bKey, serde_json::json!({}));
                Ok(())
            })
            .await?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        .await,
    )
}

#[derive(Debug, Default, Deserialize)]
struct TimeoutBody {
    timeout: Option<i64>,
}

async fn set_timeout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: TimeoutBody = parse_body(&body)?;
            let seconds = match req.timeout {
                Some(t) if t > 0 => t as u64,
                _ => {
                    return Err(E2bError::InvalidArgument(
                        "give {\"timeout\": seconds}, a positive number".into(),
                    ))
                }
            };
            let ms = timeout_ms(seconds).map_err(E2bError::from)?;
            blocking(&state, move |state| {
                live_record(&state, &id)?;
                state
                    .manager
                    .set_timeout(&id, ms)
                    .map_err(|e| control_error(&id, e))?;
                Ok(())
            })
            .await?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        .await,
    )
}

/// Resumes paused sandbox `id` for E2B: a refusal is E2B's (409 when it is not paused).
fn resume_now(state: &AppState, id: &str) -> Result<(), E2bError> {
    crate::service::lifecycle::resume(state, id, &Caller::E2bKey)
        .map(|_| ())
        .map_err(|e| match e {
            crate::ApiError::Conflict(m) => E2bError::FailedPrecondition(m),
            crate::ApiError::QueueFull(m) => E2bError::ResourceExhausted(m),
            crate::ApiError::NotFound(m) | crate::ApiError::NotRunning(m) => E2bError::NotFound(m),
            other => E2bError::Internal(other.to_string()),
        })
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PauseBody {
    memory: Option<bool>,
    #[allow(dead_code)]
    require_healthy_guest: Option<bool>,
}

/// `POST /sandboxes/{id}/pause`: 204 once paused (with its memory wherever the box's kind can),
/// 409 when it is paused already, 404 when it is unknown or ended.
async fn pause(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: PauseBody = parse_body(&body)?;
            blocking(&state, move |state| {
                let rec = live_record(&state, &id)?;
                // 409 means "already paused" to the SDKs (their pause() then returns false), so
                // only that answers 409; a pause that failed is an error they raise.
                if matches!(rec.state, SandboxState::Paused | SandboxState::Resuming) {
                    return Err(E2bError::FailedPrecondition(format!(
                        "sandbox {id} is already paused"
                    )));
                }
                crate::service::lifecycle::pause(
                    &state,
                    &id,
                    req.memory.unwrap_or(true),
                    &Caller::E2bKey,
                )
                .map_err(|e| match e {
                    crate::ApiError::Conflict(m) => E2bError::Internal(m),
                    crate::ApiError::NotFound(m) | crate::ApiError::NotRunning(m) => {
                        E2bError::NotFound(m)
                    }
                    other => E2bError::Internal(other.to_string()),
                })?;
                Ok(())
            })
            .await?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        .await,
    )
}

/// `POST /sandboxes/{id}/resume` (deprecated; `connect` resumes too): 201 with the sandbox,
/// 409 when it is not paused.
async fn resume(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: ConnectBody = parse_body(&body)?;
            let shown = blocking(&state, move |state| {
                let rec = live_record(&state, &id)?;
                if !matches!(rec.state, SandboxState::Paused | SandboxState::Resuming) {
                    return Err(E2bError::FailedPrecondition(format!(
                        "sandbox {id} is already running"
                    )));
                }
                resume_now(&state, &id)?;
                let rec = live_record(&state, &id)?;
                if let Some(t) = req.timeout.filter(|t| *t > 0) {
                    extend_to(&state, &id, &rec, t as u64)?;
                }
                let token = state.e2b.token_of(&id);
                Ok(views::sandbox(
                    &rec,
                    token.as_deref(),
                    state.e2b.domain.as_deref(),
                ))
            })
            .await?;
            Ok((StatusCode::CREATED, Json(shown)).into_response())
        }
        .await,
    )
}

#[derive(Debug, Default, Deserialize)]
struct ForkBody {
    timeout: Option<i64>,
    count: Option<u32>,
}

/// `POST /sandboxes/{id}/fork` `{timeout?, count?}`: 201 with one result per new sandbox
/// (`{sandbox}` or `{error: {code, message}}`), all from one snapshot of this moment.
async fn fork(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: ForkBody = parse_body(&body)?;
            let count = req.count.unwrap_or(1);
            if !(1..=crate::requests::MAX_FORK).contains(&count) {
                return Err(E2bError::InvalidArgument(format!(
                    "count must be between 1 and {}, not {count}",
                    crate::requests::MAX_FORK
                )));
            }
            let timeout = match req.timeout {
                Some(t) if t > 0 => Some(timeout_ms(t as u64).map_err(E2bError::from)?),
                _ => None,
            };
            let results = blocking(&state, move |state| {
                live_record(&state, &id)?;
                let (_, forks) = crate::service::lifecycle::fork(
                    &state,
                    &id,
                    count,
                    None,
                    timeout,
                    &Caller::E2bKey,
                )
                .map_err(E2bError::from)?;
                let mut out = Vec::new();
                for f in forks {
                    match f.outcome {
                        Ok(_) => {
                            state.e2b.remember_token(&f.id, &f.token);
                            let rec = live_record(&state, &f.id)?;
                            out.push(serde_json::json!({
                                "sandbox": views::sandbox(&rec, Some(&f.token), state.e2b.domain.as_deref())
                            }));
                        }
                        Err(e) => out.push(serde_json::json!({
                            "error": { "code": e.status().as_u16(), "message": e.to_string() }
                        })),
                    }
                }
                Ok(out)
            })
            .await?;
            Ok((StatusCode::CREATED, Json(results)).into_response())
        }
        .await,
    )
}

#[derive(Debug, Default, Deserialize)]
struct SnapshotBody {
    name: Option<String>,
    #[allow(dead_code)]
    memory: Option<bool>,
}

/// `POST /sandboxes/{id}/snapshots` `{name?, memory?}`: 201 `{snapshotID, names}`.
async fn snapshot(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let req: SnapshotBody = parse_body(&body)?;
            let taken = blocking(&state, move |state| {
                live_record(&state, &id)?;
                crate::service::lifecycle::snapshot(&state, &id, req.name, &Caller::E2bKey)
                    .map_err(E2bError::from)
            })
            .await?;
            let names: Vec<String> = taken.name.into_iter().collect();
            Ok((
                StatusCode::CREATED,
                Json(serde_json::json!({ "snapshotID": taken.id, "names": names })),
            )
                .into_response())
        }
        .await,
    )
}

/// Takes a sample of live sandbox `id` into its history; answers the history.
pub(crate) fn record_sample(
    state: &AppState,
    id: &str,
) -> Result<std::sync::Arc<super::boxstate::E2bBox>, E2bError> {
    let rec = live_record(state, id)?;
    let started = started_ms(state, id);
    // A look, not a request: it must neither resume a paused box nor keep it from idling.
    let looked = state.manager.inspect(id, |h| {
        let usage = h.sandbox().usage().unwrap_or_default();
        // Inside the lent handle: the box's end (which drops its state) comes after.
        let boxed = state.e2b.box_state(id);
        boxed.metrics.record(&rec, &usage, started, now_ms());
        boxed
    });
    match looked {
        Ok(boxed) => Ok(boxed),
        // A paused box takes no new sample (nothing runs): its history so far, as E2B keeps
        // a paused sandbox's metrics. Never made here: the box may be ending meanwhile.
        Err(airlock_sessions::ManagerError::NotRunning {
            state: airlock_sessions::SessionState::Paused,
            ..
        }) => Ok(state.e2b.existing_box(id).unwrap_or_default()),
        Err(e) => Err(E2bError::from(state.manager_error(id, e))),
    }
}

/// The metrics query's `start` and `end` (Unix seconds).
pub fn metrics_range(raw: &str) -> Result<(Option<i64>, Option<i64>), E2bError> {
    #[derive(Deserialize)]
    struct Range {
        start: Option<i64>,
        end: Option<i64>,
    }
    let r: Range = serde_urlencoded::from_str(raw).map_err(|_| {
        E2bError::InvalidArgument(
            "start and end are Unix times in seconds (start=1700000000&end=1700000600)".into(),
        )
    })?;
    if let (Some(s), Some(e)) = (r.start, r.end) {
        if e < s {
            return Err(E2bError::InvalidArgument(format!(
                "end {e} is before start {s}; give a range that moves forward"
            )));
        }
    }
    Ok((r.start, r.end))
}

async fn metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    respond(
        async move {
            require_api_key(&state.e2b, &headers)?;
            let (start, end) = metrics_range(raw.as_deref().unwrap_or(""))?;
            let samples = blocking(&state, move |state| {
                let history = record_sample(&state, &id)?;
                Ok(match (start, end) {
                    (None, None) => history.metrics.latest().into_iter().collect(),
                    _ => history.metrics.between(start, end),
                })
            })
            .await?;
            Ok(Json(samples).into_response())
        }
        .await,
    )
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
