//! A sandbox as the API shows it: the store's record, with what only the live manager knows
//! (queue position, start time) when the sandbox is live.

use crate::observer::lock;
use crate::state::AppState;
use crate::ApiError;
use airlock_store::{SandboxFilter, SandboxRecord, SandboxState, MAX_PAGE};
use serde::Serialize;
use std::collections::BTreeMap;

/// The JSON of one sandbox.
#[derive(Debug, Serialize)]
pub struct SandboxView {
    pub id: String,
    pub template: String,
    pub state: SandboxState,
    pub reason: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub created_ms: i64,
    pub started_ms: Option<i64>,
    pub deadline_ms: i64,
    pub ended_ms: Option<i64>,
    pub queue_position: Option<usize>,
    /// Its latest refusals while it lives (at most 20, oldest first): what, the rule, the
    /// grant that would allow it. Every one is also in its events.
    pub denials: Vec<airlock_policy::Denial>,
    /// The sandbox's access token: only in the answer to its creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

fn view(state: &AppState, rec: SandboxRecord) -> SandboxView {
    let live = state.manager.get(&rec.id);
    SandboxView {
        denials: state.denials.of(&rec.id),
        started_ms: live.as_ref().and_then(|i| i.started_ms),
        queue_position: live.as_ref().and_then(|i| i.queue_position),
        id: rec.id,
        template: rec.template,
        state: rec.state,
        reason: rec.reason,
        metadata: rec.metadata,
        created_ms: rec.created_ms,
        deadline_ms: rec.deadline_ms,
        ended_ms: rec.ended_ms,
        token: None,
    }
}

/// One sandbox, or not_found.
pub fn get(state: &AppState, id: &str) -> Result<SandboxView, ApiError> {
    let rec = lock(&state.store).get_sandbox(id)?;
    let rec = rec.ok_or_else(|| {
        ApiError::NotFound(format!(
            "no sandbox {id:?}; list the sandboxes to see which exist"
        ))
    })?;
    Ok(view(state, rec))
}

/// Sandboxes matching `filter`, newest first.
pub fn list(state: &AppState, mut filter: SandboxFilter) -> Result<Vec<SandboxView>, ApiError> {
    filter.limit = MAX_PAGE;
    let recs = lock(&state.store).list_sandboxes(&filter)?;
    Ok(recs.into_iter().map(|r| view(state, r)).collect())
}
