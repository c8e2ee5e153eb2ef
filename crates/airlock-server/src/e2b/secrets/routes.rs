//! `/secrets`: E2B's Secret SDK (`Secret.create`, `update`, `get_info`, `list`, `delete`), on
//! the E2B API key. Answers carry `secretID`, `name`, `currentVersion`, `metadata`,
//! `createdAt`, `updatedAt`, never the value; a secret is found by its id or its name.

use super::super::auth::require_api_key;
use super::super::error::E2bError;
use super::super::views::rfc3339;
use super::vault::{SecretInfo, VaultError};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The most secrets one list page holds.
const MAX_PAGE: usize = 100;

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/secrets", post(create).get(list))
        .route(
            "/secrets/{secret_id}",
            get(get_one).post(update).delete(delete),
        )
}

/// `POST /secrets`.
#[derive(Deserialize)]
struct NewSecret {
    name: String,
    value: String,
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
}

/// `POST /secrets/{id}`.
#[derive(Deserialize)]
struct SecretUpdate {
    value: String,
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
}

fn view(s: &SecretInfo) -> Value {
    json!({
        "secretID": s.id,
        "name": s.name,
        "currentVersion": s.version,
        "metadata": s.metadata,
        "createdAt": rfc3339(s.created_ms),
        "updatedAt": rfc3339(s.updated_ms),
    })
}

impl From<VaultError> for E2bError {
    fn from(e: VaultError) -> E2bError {
        match e {
            VaultError::Invalid(m) => E2bError::InvalidArgument(m),
            VaultError::NotFound(m) => E2bError::NotFound(m),
            VaultError::Exists(m) => E2bError::AlreadyExists(m),
            VaultError::Io(m) => E2bError::Internal(m),
        }
    }
}

/// The body as `T`. serde's message names the field, never a value.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, E2bError> {
    serde_json::from_slice(body).map_err(|e| {
        E2bError::InvalidArgument(format!(
            "the request body is not valid for this route ({}): it is a JSON object with name, value and optional metadata",
            e.classify_message()
        ))
    })
}

trait Classify {
    fn classify_message(&self) -> String;
}

impl Classify for serde_json::Error {
    /// serde's message without the input it quotes (which could be the value).
    fn classify_message(&self) -> String {
        match self.classify() {
            serde_json::error::Category::Io => "unreadable".into(),
            serde_json::error::Category::Syntax => format!(
                "malformed JSON at line {} column {}",
                self.line(),
                self.column()
            ),
            serde_json::error::Category::Eof => "it ends early".into(),
            serde_json::error::Category::Data => {
                let m = self.to_string();
                if m.starts_with("missing field") || m.starts_with("unknown field") {
                    m.split(" at line")
                        .next()
                        .unwrap_or("a field is wrong")
                        .to_string()
                } else {
                    "a field has the wrong type".into()
                }
            }
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

async fn blocking<R: Send + 'static>(
    state: AppState,
    f: impl FnOnce(&super::Vault) -> Result<R, VaultError> + Send + 'static,
) -> Result<R, E2bError> {
    tokio::task::spawn_blocking(move || f(&state.e2b.vault).map_err(E2bError::from))
        .await
        .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
}

async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        let req: NewSecret = parse(&body)?;
        let info = blocking(state, move |v| {
            let value = zeroize::Zeroizing::new(req.value);
            v.create(
                &req.name,
                &value,
                req.metadata.unwrap_or_default(),
                now_ms(),
            )
        })
        .await?;
        Ok((StatusCode::CREATED, Json(view(&info))).into_response())
    };
    run.await.unwrap_or_else(|e: E2bError| e.rest_response())
}

async fn update(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        let req: SecretUpdate = parse(&body)?;
        let info = blocking(state, move |v| {
            let value = zeroize::Zeroizing::new(req.value);
            v.update(&id, &value, req.metadata, now_ms())
        })
        .await?;
        Ok(Json(view(&info)).into_response())
    };
    run.await.unwrap_or_else(|e: E2bError| e.rest_response())
}

async fn get_one(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        let info = blocking(state, move |v| v.get(&id)).await?;
        Ok(Json(view(&info)).into_response())
    };
    run.await.unwrap_or_else(|e: E2bError| e.rest_response())
}

async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        blocking(state, move |v| v.delete(&id)).await?;
        Ok(StatusCode::NO_CONTENT.into_response())
    };
    run.await.unwrap_or_else(|e: E2bError| e.rest_response())
}

/// `limit` (1 to 100, default 100) and `nextToken` (the offset a previous page gave).
fn page_query(raw: &str) -> Result<(usize, usize), E2bError> {
    let bad = |what: &str| E2bError::InvalidArgument(format!("the query's {what} is malformed"));
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw).map_err(|_| bad("encoding"))?;
    let (mut limit, mut offset) = (MAX_PAGE, 0);
    for (k, v) in pairs {
        match k.as_str() {
            "limit" => {
                let n: usize = v.parse().map_err(|_| bad("limit"))?;
                if n == 0 {
                    return Err(E2bError::InvalidArgument("limit must be at least 1".into()));
                }
                limit = n.min(MAX_PAGE);
            }
            "nextToken" => offset = v.parse().map_err(|_| bad("nextToken"))?,
            _ => {}
        }
    }
    Ok((limit, offset))
}

async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        let (limit, offset) = page_query(raw.as_deref().unwrap_or(""))?;
        let all = state.e2b.vault.list();
        let page: Vec<Value> = all.iter().skip(offset).take(limit).map(view).collect();
        let next = offset + page.len();
        let mut res = Json(page).into_response();
        if next < all.len() {
            if let Ok(v) = HeaderValue::from_str(&next.to_string()) {
                res.headers_mut().insert("x-next-token", v);
            }
        }
        Ok(res)
    };
    run.await.unwrap_or_else(|e: E2bError| e.rest_response())
}
