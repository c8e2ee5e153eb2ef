//! envd's `process.Process` Connect service. A stub: every method answers Connect
//! `unimplemented` until the process service replaces this file (it keeps the signature of
//! [`router`]). The envd router puts the access-token check in front of these routes.

use super::connect::{stream_error, unary_error};
use super::error::E2bError;
use crate::state::AppState;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

/// The `process.Process` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/process.Process/{method}", post(unimplemented))
}

async fn unimplemented(Path(method): Path<String>, headers: HeaderMap) -> Response {
    let e = E2bError::Unimplemented(format!("process.Process/{method} is not implemented yet in this build of airlock"));
    let streaming = headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("application/connect+"));
    if streaming {
        stream_error(&e)
    } else {
        unary_error(&e)
    }
}
