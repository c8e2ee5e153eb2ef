//! The sandbox collection and each sandbox's record: create, list, get, kill, extend, events.

use crate::auth::{require_box, require_key};
use crate::checks::{self, FieldError};
use crate::observer::lock;
use crate::requests::{parse, CreateRequest, TimeoutRequest};
use crate::secrets::{new_sandbox_id, new_token};
use crate::service::sandboxes::{audit, create_session, timeout_ms};
use crate::state::AppState;
use crate::template::{pick, resolve_policy};
use crate::view::{self, SandboxView};
use crate::ApiError;
use airlock_sessions::SessionSpec;
use airlock_store::{SandboxFilter, SandboxState};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;

/// `POST /v1/sandboxes`.
pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<SandboxView>), ApiError> {
    let caller = require_key(&state, &headers)?;
    let mut req: CreateRequest = parse(&body, true)?;
    let (template, cwd, root) = pick(req.template.as_deref(), &state.templates)?;
    req.check()?;
    let timeout_ms = req.timeout.map(timeout_ms).transpose()?;
    let mut policy = resolve_policy(&mut req, &cwd, state.default_backend)?;
    crate::template::apply(&mut policy, &root)?;
    state
        .backends
        .usable(policy.backend)
        .map_err(|e| FieldError::new("backend", e.to_string()))?;
    let secrets = airlock_policy::SecretValues::of(&policy);
    let policy = serde_json::to_value(&policy)
        .map_err(|e| ApiError::Internal(format!("the policy cannot be encoded: {e}")))?;
    let random = |r: std::io::Result<String>| {
        r.map_err(|e| {
            ApiError::Internal(format!(
                "no random bytes for the sandbox's id or token: {e}"
            ))
        })
    };
    let (id, token) = (random(new_sandbox_id())?, random(new_token())?);
    let mut spec = SessionSpec::new(template, policy);
    req.lifecycle(&mut spec)?;
    spec.metadata = std::mem::take(&mut req.metadata);
    spec.timeout_ms = timeout_ms;
    let box_token = token.clone();
    let mut shown = state
        .blocking(move |state| {
            state.held_secrets.hold(&id, secrets);
            if let Err(e) = create_session(&state, &id, &box_token, spec, &caller) {
                state.held_secrets.forget(&id);
                return Err(e);
            }
            view::get(&state, &id)
        })
        .await?;
    if shown.state == SandboxState::Failed {
        return Err(ApiError::Internal(format!(
            "sandbox {} could not start: {}",
            shown.id,
            shown.reason.unwrap_or_default()
        )));
    }
    shown.token = Some(token);
    Ok((StatusCode::CREATED, Json(shown)))
}

/// `GET /v1/sandboxes?state=S&metadata.K=V`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Vec<SandboxView>>, ApiError> {
    require_key(&state, &headers)?;
    let filter = list_filter(query.as_deref().unwrap_or(""))?;
    Ok(Json(
        state
            .blocking(move |state| view::list(&state, filter))
            .await?,
    ))
}

/// The filter of a list query: `state` (repeatable, or comma-separated) and metadata labels as
/// `metadata[KEY]=VALUE` (OpenAPI's deepObject) or `metadata.KEY=VALUE`.
pub fn list_filter(query: &str) -> Result<SandboxFilter, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| ApiError::Invalid(format!("the query string is malformed: {e}")))?;
    let mut filter = SandboxFilter::default();
    for (k, v) in pairs {
        if k == "state" {
            for name in v.split(',') {
                let s = SandboxState::from_name(name).ok_or_else(|| {
                    FieldError::new(
                        "?state=",
                        format!("use queued, starting, running, paused, killed, expired, dead or failed (repeated, or joined by commas), not {name:?}"),
                    )
                })?;
                filter.states.push(s);
            }
        } else if let Some(key) = k
            .strip_prefix("metadata[")
            .and_then(|rest| rest.strip_suffix(']'))
            .or_else(|| k.strip_prefix("metadata."))
        {
            filter.metadata.insert(key.to_string(), v);
        }
    }
    checks::metadata("?metadata", &filter.metadata)?;
    Ok(filter)
}

/// `GET /v1/sandboxes/{id}`.
pub async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<SandboxView>, ApiError> {
    require_box(&state, &headers, &id)?;
    Ok(Json(
        state.blocking(move |state| view::get(&state, &id)).await?,
    ))
}

/// `DELETE /v1/sandboxes/{id}`.
pub async fn kill(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<SandboxView>, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let shown = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            state
                .manager
                .kill(&id)
                .map_err(|e| state.manager_error(&id, e))?;
            audit(&state, &id, "kill", &caller, serde_json::json!({}));
            view::get(&state, &id)
        })
        .await?;
    Ok(Json(shown))
}

/// `POST /v1/sandboxes/{id}/timeout`.
pub async fn set_timeout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<SandboxView>, ApiError> {
    require_box(&state, &headers, &id)?;
    let req: TimeoutRequest = parse(&body, false)?;
    let ms = req.check()?;
    let shown = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            state
                .manager
                .set_timeout(&id, ms)
                .map_err(|e| state.manager_error(&id, e))?;
            view::get(&state, &id)
        })
        .await?;
    Ok(Json(shown))
}

/// `GET /v1/sandboxes/{id}/events?after=N`.
pub async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<serde_json::Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
            .map_err(|e| ApiError::Invalid(format!("the query string is malformed: {e}")))?;
    let mut after = None;
    for (k, v) in pairs {
        if k == "after" {
            let id = v.parse::<i64>().ok().filter(|id| *id >= 0).ok_or_else(|| {
                FieldError::new(
                    "?after=",
                    format!(
                        "give an event id, a whole number from 0 to {}, not {v:?}",
                        i64::MAX
                    ),
                )
            })?;
            after = Some(id);
        }
    }
    let events = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            Ok(lock(&state.store).events(&id, after, airlock_store::MAX_PAGE)?)
        })
        .await?;
    Ok(Json(serde_json::json!({ "events": events })))
}
