//! envd's directory watching (`filesystem.Filesystem/WatchDir`, `CreateWatcher`,
//! `GetWatcherEvents`, `RemoveWatcher`). A stub: every method answers Connect `unimplemented`
//! until the watch service replaces this file (it keeps the signature of [`router`]). The
//! envd router puts the access-token check in front of these routes.

use super::connect::{stream_error, unary_error};
use super::error::E2bError;
use crate::state::AppState;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

/// The watch routes (static paths; they take precedence over the filesystem's `{method}`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/filesystem.Filesystem/WatchDir", post(|| async { stream_error(&not_yet("WatchDir")) }))
        .route("/filesystem.Filesystem/CreateWatcher", post(|| async { unary(&not_yet("CreateWatcher")) }))
        .route("/filesystem.Filesystem/GetWatcherEvents", post(|| async { unary(&not_yet("GetWatcherEvents")) }))
        .route("/filesystem.Filesystem/RemoveWatcher", post(|| async { unary(&not_yet("RemoveWatcher")) }))
}

fn not_yet(method: &str) -> E2bError {
    E2bError::Unimplemented(format!("filesystem.Filesystem/{method} (directory watching) is not implemented yet in this build of airlock"))
}

fn unary(e: &E2bError) -> Response {
    unary_error(e)
}
