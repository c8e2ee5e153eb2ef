//! envd (E2B's port 49983): the Connect services (filesystem, process, watch) behind the
//! sandbox's access token, and the plain-HTTP `/health`, `/files` and `/envs`.

use super::auth::{require_token, user_from_headers};
use super::connect::unary_error;
use super::error::E2bError;
use super::{boxio, files, filesystem, process, watch};
use crate::state::AppState;
use airlock_sessions::SessionState;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

/// envd's router.
pub fn router(state: AppState) -> Router {
    let guarded = Router::new()
        .merge(watch::router())
        .route("/filesystem.Filesystem/{method}", post(filesystem::call))
        .merge(process::router())
        .route("/envs", get(envs))
        .route_layer(from_fn_with_state(state.clone(), guard));
    Router::new()
        .route("/health", get(health))
        .route(
            "/files",
            get(files::download)
                .post(files::upload)
                .layer(DefaultBodyLimit::disable()),
        )
        .merge(guarded)
        .fallback(|| async { E2bError::NotFound("envd has no such route".into()).rest_response() })
        .with_state(state)
}

/// Requires the sandbox's access token and a known user on every Connect call and `/envs`.
async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let checked = (|| {
        let id = super::sandbox_id(req.headers())
            .ok_or_else(|| E2bError::InvalidArgument("E2b-Sandbox-Id is missing".into()))?;
        require_token(&state.e2b, req.headers(), id)?;
        user_from_headers(req.headers())?;
        Ok::<(), E2bError>(())
    })();
    match checked {
        Ok(()) => next.run(req).await,
        // The request's body (maybe a chunked stream) is left unread: the connection cannot
        // carry another request, so say so rather than let the client's pool reuse it.
        Err(e) => super::connect::closing(unary_error(&e)),
    }
}

/// `GET /health`: 204 while the sandbox runs, 502 otherwise (the SDK's `is_running`).
async fn health(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let running = super::sandbox_id(&headers)
        .and_then(|id| state.manager.get(id))
        .is_some_and(|i| i.state == SessionState::Running);
    if running {
        StatusCode::NO_CONTENT.into_response()
    } else {
        E2bError::SandboxGone(
            "the sandbox was not found: it ended, was killed or never existed".into(),
        )
        .rest_response()
    }
}

/// `GET /envs`: the box's environment.
async fn envs(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(id) = super::sandbox_id(&headers).map(str::to_string) else {
        return E2bError::InvalidArgument("E2b-Sandbox-Id is missing".into()).rest_response();
    };
    match boxio::with_session(&state, &id, |s| Ok(s.default_env().clone())).await {
        Ok(env) => axum::Json(env).into_response(),
        Err(e) => e.rest_response(),
    }
}
