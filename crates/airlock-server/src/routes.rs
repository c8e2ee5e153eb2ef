//! The HTTP routes, one module per resource; [`router`] wires them, and [`ROUTES`] lists them
//! (the OpenAPI document must describe each).

mod approvals;
pub(crate) mod code;
mod exec;
mod files;
mod lifecycle;
pub(crate) mod openapi;
mod pools;
pub(crate) mod sandboxes;

use crate::state::AppState;
use crate::ApiError;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use axum::Router;

/// Every route as (method, path).
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/openapi.json"),
    ("post", "/v1/sandboxes"),
    ("get", "/v1/sandboxes"),
    ("get", "/v1/sandboxes/{id}"),
    ("delete", "/v1/sandboxes/{id}"),
    ("post", "/v1/sandboxes/{id}/timeout"),
    ("post", "/v1/sandboxes/{id}/exec"),
    ("get", "/v1/sandboxes/{id}/files"),
    ("put", "/v1/sandboxes/{id}/files"),
    ("get", "/v1/sandboxes/{id}/files/list"),
    ("get", "/v1/sandboxes/{id}/events"),
    ("post", "/v1/sandboxes/{id}/code"),
    ("post", "/v1/sandboxes/{id}/contexts"),
    ("get", "/v1/sandboxes/{id}/contexts"),
    ("post", "/v1/sandboxes/{id}/contexts/{ctx}/restart"),
    ("delete", "/v1/sandboxes/{id}/contexts/{ctx}"),
    ("post", "/v1/sandboxes/{id}/pause"),
    ("post", "/v1/sandboxes/{id}/resume"),
    ("post", "/v1/sandboxes/{id}/snapshots"),
    ("get", "/v1/sandboxes/{id}/snapshots"),
    ("post", "/v1/sandboxes/{id}/fork"),
    ("get", "/v1/sandboxes/{id}/approvals"),
    ("post", "/v1/sandboxes/{id}/approvals/{n}"),
    ("get", "/v1/pools"),
];

/// The API's router: the native API and E2B's control plane, behind the E2B gateway's
/// dispatcher (which sends sandbox traffic, by its `E2b-Sandbox-*` headers, to envd or the code
/// interpreter). The E2B routes are a separate protocol and are not in [`ROUTES`] nor in
/// `/openapi.json`.
pub fn router(state: AppState) -> Router {
    let gateway = crate::e2b::Gateway::new(&state);
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .route(
            "/v1/sandboxes",
            post(sandboxes::create).get(sandboxes::list),
        )
        .route(
            "/v1/sandboxes/{id}",
            get(sandboxes::get).delete(sandboxes::kill),
        )
        .route("/v1/sandboxes/{id}/timeout", post(sandboxes::set_timeout))
        .route("/v1/sandboxes/{id}/exec", post(exec::exec))
        .route(
            "/v1/sandboxes/{id}/files",
            get(files::read)
                .put(files::write)
                .layer(DefaultBodyLimit::disable()),
        )
        .route("/v1/sandboxes/{id}/files/list", get(files::list))
        .route("/v1/sandboxes/{id}/events", get(sandboxes::events))
        .route("/v1/sandboxes/{id}/code", post(code::run))
        .route(
            "/v1/sandboxes/{id}/contexts",
            post(code::create).get(code::list),
        )
        .route(
            "/v1/sandboxes/{id}/contexts/{ctx}/restart",
            post(code::restart),
        )
        .route("/v1/sandboxes/{id}/contexts/{ctx}", delete(code::delete))
        .route("/v1/sandboxes/{id}/pause", post(lifecycle::pause))
        .route("/v1/sandboxes/{id}/resume", post(lifecycle::resume))
        .route(
            "/v1/sandboxes/{id}/snapshots",
            post(lifecycle::create_snapshot).get(lifecycle::list_snapshots),
        )
        .route("/v1/sandboxes/{id}/fork", post(lifecycle::fork))
        .route("/v1/sandboxes/{id}/approvals", get(approvals::list))
        .route("/v1/sandboxes/{id}/approvals/{n}", post(approvals::answer))
        .route("/v1/pools", get(pools::list))
        .merge(crate::e2b::control_routes())
        .fallback(|req: axum::extract::Request| async move {
            if crate::e2b::is_native_path(req.uri().path()) {
                ApiError::NotFound("no such route; see GET /openapi.json for the API".into())
                    .into_response()
            } else {
                crate::e2b::unserved(req.method(), req.uri().path())
            }
        })
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(
            gateway,
            crate::e2b::dispatch,
        ))
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
