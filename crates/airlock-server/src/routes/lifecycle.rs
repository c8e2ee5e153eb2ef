//! A sandbox's lifecycle: pause, resume, snapshots and forks.

use crate::auth::{require_box, require_key};
use crate::requests::{parse, ForkRequest, PauseRequest, SnapshotRequest};
use crate::service::lifecycle;
use crate::service::sandboxes::timeout_ms;
use crate::state::AppState;
use crate::view;
use crate::ApiError;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};

/// `POST /v1/sandboxes/{id}/pause` `{memory?}`: the sandbox, and what its pause kept.
pub async fn pause(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let req: PauseRequest = parse(&body, true)?;
    let memory = req.memory.unwrap_or(true);
    let shown = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            let (_, note) = lifecycle::pause(&state, &id, memory, &caller)?;
            Ok(json!({ "sandbox": view::get(&state, &id)?, "kept": note }))
        })
        .await?;
    Ok(Json(shown))
}

/// `POST /v1/sandboxes/{id}/resume`: the sandbox, running again, and how it was resumed.
pub async fn resume(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let shown = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            let (_, note) = lifecycle::resume(&state, &id, &caller)?;
            Ok(json!({ "sandbox": view::get(&state, &id)?, "resumed": note }))
        })
        .await?;
    Ok(Json(shown))
}

/// `POST /v1/sandboxes/{id}/snapshots` `{name?}`: a snapshot of the running box (it runs on).
pub async fn create_snapshot(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let req: SnapshotRequest = parse(&body, true)?;
    req.check()?;
    let taken = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            lifecycle::snapshot(&state, &id, req.name, &caller)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(json!(taken))))
}

/// `GET /v1/sandboxes/{id}/snapshots`: its snapshots, oldest first.
pub async fn list_snapshots(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let all = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            state
                .manager
                .factory()
                .snapshots()
                .of(&id)
                .map_err(ApiError::Internal)
        })
        .await?;
    Ok(Json(json!({ "snapshots": all })))
}

/// `POST /v1/sandboxes/{id}/fork` `{count?, snapshot?, timeout?}`: `count` new sandboxes from
/// one snapshot, each with its own id and token (shown once) and its own writable state.
pub async fn fork(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let caller = require_key(&state, &headers)?;
    let req: ForkRequest = parse(&body, true)?;
    let count = req.check()?;
    let timeout = req.timeout.map(timeout_ms).transpose()?;
    let shown = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            let (record, forks) =
                lifecycle::fork(&state, &id, count, req.snapshot, timeout, &caller)?;
            let boxes: Vec<Value> = forks
                .into_iter()
                .map(|f| match f.outcome {
                    Ok(_) => match view::get(&state, &f.id) {
                        Ok(mut v) => {
                            v.token = Some(f.token);
                            json!(v)
                        }
                        Err(e) => json!({ "id": f.id, "error": e.to_string() }),
                    },
                    Err(e) => json!({ "id": f.id, "error": e.to_string() }),
                })
                .collect();
            Ok(json!({ "snapshot": record, "sandboxes": boxes }))
        })
        .await?;
    Ok((StatusCode::CREATED, Json(shown)))
}
