//! Files inside a box: read (streamed out), write (streamed in) and list. Neither direction
//! holds a whole file in memory: bytes pass through a short bounded channel.

use crate::auth::require_box;
use crate::checks::{self, FieldError};
use crate::service::sandboxes::audit;
use crate::state::AppState;
use crate::ApiError;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::Json;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::mpsc;

/// Chunks buffered in either direction.
const CHUNKS_BUFFERED: usize = 8;

#[derive(Debug, Deserialize)]
struct FileQuery {
    path: Option<String>,
    depth: Option<u32>,
}

fn query(raw: Option<&str>) -> Result<(String, Option<u32>), ApiError> {
    let q: FileQuery = serde_urlencoded::from_str(raw.unwrap_or("")).map_err(|e| {
        ApiError::Invalid(format!(
            "the query string is malformed: {e}; give ?path=/absolute/path"
        ))
    })?;
    let path = q.path.ok_or_else(|| {
        FieldError::new(
            "?path=",
            "give an absolute path inside the sandbox, e.g. /tmp/data.txt",
        )
    })?;
    checks::absolute_path("?path=", &path)?;
    let depth = q
        .depth
        .map(|d| checks::list_depth("?depth=", d))
        .transpose()?;
    Ok((path, depth))
}

/// `GET /v1/sandboxes/{id}/files?path=`: the file's bytes.
pub async fn read(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    require_box(&state, &headers, &id)?;
    let (path, _) = query(raw.as_deref())?;
    let body = crate::transfer::stream_out(
        move |out| match state
            .manager
            .with_handle(&id, |h| h.sandbox().new_channel())
        {
            Err(e) => Err(state.manager_error(&id, e)),
            Ok(mut s) => s.read_file_to(&path, out).map_err(ApiError::from_box),
        },
        || ApiError::Internal("the file's reader ended without a word; retry".into()),
    )
    .await?;
    Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(body)
        .map_err(|e| ApiError::Internal(format!("cannot build the response: {e}")))
}

/// `PUT /v1/sandboxes/{id}/files?path=`: the body becomes the file (created or replaced).
pub async fn write(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    body: Body,
) -> Result<Json<serde_json::Value>, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let (path, _) = query(raw.as_deref())?;
    let (tx, rx) = mpsc::channel(CHUNKS_BUFFERED);
    tokio::spawn(async move {
        let mut chunks = body.into_data_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk
                .map_err(|e| std::io::Error::other(format!("the request body broke off: {e}")));
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                break;
            }
        }
    });
    let size = state
        .blocking(move |state| {
            let mut input = crate::transfer::ChunkReader::new(rx);
            let size = state
                .manager
                .with_handle(&id, |h| h.sandbox().new_channel())
                .map(|mut s| s.write_file_from(&path, &mut input))
                .map_err(|e| state.manager_error(&id, e))?
                .map_err(ApiError::from_box)?;
            audit(
                &state,
                &id,
                "file_write",
                &caller,
                serde_json::json!({"path": path, "size": size}),
            );
            Ok((path, size))
        })
        .await?;
    Ok(Json(serde_json::json!({"path": size.0, "size": size.1})))
}

/// `GET /v1/sandboxes/{id}/files/list?path=&depth=`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<serde_json::Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let (path, depth) = query(raw.as_deref())?;
    let entries = state
        .blocking(move |state| {
            let entries = state
                .manager
                .with_handle(&id, |h| h.sandbox().new_channel())
                .map(|mut s| s.list_dir(&path, depth.unwrap_or(1)))
                .map_err(|e| state.manager_error(&id, e))?
                .map_err(ApiError::from_box)?;
            serde_json::to_value(entries)
                .map_err(|e| ApiError::Internal(format!("cannot encode the listing: {e}")))
        })
        .await?;
    Ok(Json(serde_json::json!({ "entries": entries })))
}
