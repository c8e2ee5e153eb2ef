//! The one door to a box for the gateway: every file operation, listing, stat and command of
//! the E2B surfaces goes through [`with_session`] (or [`with_box`] when the interpreter
//! contexts are needed too). Each runs the blocking agent I/O off the async threads, on the
//! sandbox's handle lent by the session manager (so a kill or expiry waits for it to finish,
//! and calls on one sandbox take turns). Changing how boxes are reached (e.g. one multiplexed
//! agent connection per request) happens here only.

use super::error::E2bError;
use crate::factory::BoxHandle;
use crate::state::AppState;
use airlock_runtime::AgentSession;

/// Runs `f` on sandbox `id`'s agent session, off the async threads. A sandbox that is not
/// running answers [`E2bError::SandboxGone`].
pub async fn with_session<R: Send + 'static>(
    state: &AppState,
    id: &str,
    f: impl FnOnce(&mut AgentSession) -> Result<R, E2bError> + Send + 'static,
) -> Result<R, E2bError> {
    with_box(state, id, move |h| f(h.sandbox().session())).await
}

/// Runs `f` on sandbox `id`'s whole handle (the box and its interpreter contexts), off the
/// async threads.
pub async fn with_box<R: Send + 'static>(
    state: &AppState,
    id: &str,
    f: impl FnOnce(&mut BoxHandle) -> Result<R, E2bError> + Send + 'static,
) -> Result<R, E2bError> {
    let (state, id) = (state.clone(), id.to_string());
    tokio::task::spawn_blocking(move || with_box_blocking(&state, &id, f))
        .await
        .map_err(|_| E2bError::Internal("the request's worker failed; retry, and report it if it persists".into()))?
}

/// [`with_box`] for code already on a blocking thread.
pub fn with_box_blocking<R>(state: &AppState, id: &str, f: impl FnOnce(&mut BoxHandle) -> Result<R, E2bError>) -> Result<R, E2bError> {
    state.manager.with_handle(id, f).map_err(|e| E2bError::from_manager(id, e))?
}
