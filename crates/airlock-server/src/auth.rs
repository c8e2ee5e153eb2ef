//! Who may call: the API key (`Authorization: Bearer al_...`) may do everything; a sandbox's
//! own token may act on that sandbox only.

use crate::observer::lock;
use crate::secrets::{hash, same_hash};
use crate::state::AppState;
use crate::ApiError;
use axum::http::HeaderMap;
use std::sync::PoisonError;

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The holder of the API key.
    ApiKey,
    /// The holder of one sandbox's token.
    Sandbox(String),
    /// The holder of the E2B-format API key (the E2B gateway's control plane).
    E2bKey,
}

impl Caller {
    /// The actor name written to the audit log.
    pub fn actor(&self) -> String {
        match self {
            Caller::ApiKey => "api_key:default".into(),
            Caller::Sandbox(id) => format!("token:{id}"),
            Caller::E2bKey => "api_key:e2b".into(),
        }
    }
}

fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "no credentials: send `Authorization: Bearer <API key or sandbox token>`".into(),
            )
        })?;
    value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "the Authorization header must be `Bearer <API key or sandbox token>`".into(),
            )
        })
}

/// Requires the API key (routes about every sandbox: list, create).
pub fn require_key(state: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let h = hash(bearer(headers)?);
    if same_hash(&h, &state.api_key_hash) {
        return Ok(Caller::ApiKey);
    }
    if known_token(state, &h).is_some() {
        return Err(ApiError::Forbidden(
            "a sandbox token acts on its own sandbox only; use the API key for this route".into(),
        ));
    }
    Err(ApiError::Unauthorized(
        "the API key is wrong; use the key `airlock serve` printed on its first start".into(),
    ))
}

/// Requires the API key or sandbox `id`'s own token.
pub fn require_box(state: &AppState, headers: &HeaderMap, id: &str) -> Result<Caller, ApiError> {
    let h = hash(bearer(headers)?);
    if same_hash(&h, &state.api_key_hash) {
        return Ok(Caller::ApiKey);
    }
    let own = lock(&state.store)
        .get_sandbox(id)?
        .map(|rec| rec.token_hash);
    if own.is_some_and(|own| same_hash(&own, &h)) {
        return Ok(Caller::Sandbox(id.to_string()));
    }
    if known_token(state, &h).is_some() {
        return Err(ApiError::Forbidden(format!("this token belongs to another sandbox, not {id}; use that sandbox's token or the API key")));
    }
    Err(ApiError::Unauthorized(
        "the API key or sandbox token is wrong".into(),
    ))
}

fn known_token(state: &AppState, h: &str) -> Option<String> {
    state
        .tokens
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(h)
        .cloned()
}
