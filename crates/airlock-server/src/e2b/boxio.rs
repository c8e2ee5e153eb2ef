//! The one door to a box for the gateway: every file operation, listing and stat of the E2B
//! surfaces goes through [`with_session`] (or [`with_box`] when the interpreter contexts or the
//! gateway's per-box state are needed). Both run the blocking agent I/O off the async threads.
//! [`with_session`] borrows the box's handle only long enough to open a session of its own on
//! the box's shared agent connection, so calls on one sandbox run side by side (a long download
//! does not hold up a stat) and a kill ends them with "sandbox gone"; [`with_box`] holds the
//! handle for the whole call (calls that need it take turns).

use super::error::E2bError;
use crate::factory::BoxHandle;
use crate::state::AppState;
use airlock_runtime::AgentChannel;

/// Runs `f` on sandbox `id`'s agent session, off the async threads. A sandbox that is not
/// running answers [`E2bError::SandboxGone`].
pub async fn with_session<R: Send + 'static>(
    state: &AppState,
    id: &str,
    f: impl FnOnce(&mut AgentChannel) -> Result<R, E2bError> + Send + 'static,
) -> Result<R, E2bError> {
    let (state, id) = (state.clone(), id.to_string());
    tokio::task::spawn_blocking(move || {
        let mut session = with_box_blocking(&state, &id, |h| Ok(h.sandbox().new_channel()))?;
        f(&mut session)
    })
    .await
    .map_err(|_| {
        E2bError::Internal(
            "the request's worker failed; retry, and report it if it persists".into(),
        )
    })?
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
        .map_err(|_| {
            E2bError::Internal(
                "the request's worker failed; retry, and report it if it persists".into(),
            )
        })?
}

/// [`with_box`] for code already on a blocking thread.
pub fn with_box_blocking<R>(
    state: &AppState,
    id: &str,
    f: impl FnOnce(&mut BoxHandle) -> Result<R, E2bError>,
) -> Result<R, E2bError> {
    state
        .manager
        .with_handle(id, f)
        .map_err(|e| E2bError::from_manager(id, e))?
}
