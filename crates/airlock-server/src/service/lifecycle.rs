//! A sandbox's lifecycle below both APIs: pause, resume, named snapshots and forks. Both the
//! native routes and E2B's control plane call these (on a blocking thread); each is audited.

use crate::auth::Caller;
use crate::factory::LifecycleNote;
use crate::secrets::{new_sandbox_id, new_token};
use crate::service::sandboxes::{audit, create_session};
use crate::state::AppState;
use crate::ApiError;
use airlock_sessions::{SessionInfo, SessionSpec};
use airlock_store::{SnapshotPurpose, SnapshotRecord};

/// Pauses sandbox `id` (see [`crate::factory`] for what `memory` means per kind of box) and
/// says what was kept.
pub(crate) fn pause(
    state: &AppState,
    id: &str,
    memory: bool,
    caller: &Caller,
) -> Result<(SessionInfo, Option<LifecycleNote>), ApiError> {
    let info = state
        .manager
        .pause(id, memory)
        .map_err(|e| state.manager_error(id, e))?;
    let note = state.manager.factory().note(id);
    audit(
        state,
        id,
        "pause",
        caller,
        serde_json::json!({ "memory": memory, "kept": note }),
    );
    Ok((info, note))
}

/// Resumes paused sandbox `id` (queued like a create when every slot is busy) and says how.
pub(crate) fn resume(
    state: &AppState,
    id: &str,
    caller: &Caller,
) -> Result<(SessionInfo, Option<LifecycleNote>), ApiError> {
    let info = state
        .manager
        .resume(id)
        .map_err(|e| state.manager_error(id, e))?;
    let note = state.manager.factory().note(id);
    audit(
        state,
        id,
        "resume",
        caller,
        serde_json::json!({ "how": note }),
    );
    Ok((info, note))
}

/// Takes a snapshot of running sandbox `id` (it runs on), kept until the sandbox ends.
pub(crate) fn snapshot(
    state: &AppState,
    id: &str,
    name: Option<String>,
    caller: &Caller,
) -> Result<SnapshotRecord, ApiError> {
    let spec = spec_of(state, id)?;
    let snapshots = std::sync::Arc::clone(state.manager.factory().snapshots());
    let taken = state
        .manager
        .with_handle(id, |h| {
            snapshots.take(id, h, &spec.payload, SnapshotPurpose::Named, name, false)
        })
        .map_err(|e| state.manager_error(id, e))?
        .map_err(|why| {
            ApiError::Conflict(format!("sandbox {id} could not be snapshotted: {why}"))
        })?;
    audit(
        state,
        id,
        "snapshot",
        caller,
        serde_json::json!({ "snapshot": taken.id, "bytes": taken.bytes, "kind": taken.kind }),
    );
    Ok(taken)
}

/// One new box of a fork: its id and token, or why it could not start.
pub(crate) struct Forked {
    pub id: String,
    pub token: String,
    pub outcome: Result<SessionInfo, ApiError>,
}

/// Starts `count` new boxes from one snapshot of sandbox `id` (the named `from`, else a new
/// one): each has its own id, token and writable state, and continues from that moment.
pub(crate) fn fork(
    state: &AppState,
    id: &str,
    count: u32,
    from: Option<String>,
    timeout_ms: Option<i64>,
    caller: &Caller,
) -> Result<(SnapshotRecord, Vec<Forked>), ApiError> {
    let source = spec_of(state, id)?;
    let record = match from {
        Some(snap) => state
            .manager
            .factory()
            .snapshots()
            .of(id)
            .map_err(ApiError::Internal)?
            .into_iter()
            .find(|r| r.id == snap && r.purpose == SnapshotPurpose::Named)
            .ok_or_else(|| {
                ApiError::NotFound(format!(
                    "sandbox {id} has no snapshot {snap:?}; list them with GET /v1/sandboxes/{id}/snapshots"
                ))
            })?,
        None => snapshot(state, id, Some("fork".into()), caller)?,
    };
    let mut forks = Vec::new();
    for _ in 0..count {
        let random = |r: std::io::Result<String>| {
            r.map_err(|e| ApiError::Internal(format!("no random bytes for a fork's id: {e}")))
        };
        let (new_id, token) = (random(new_sandbox_id())?, random(new_token())?);
        let mut spec = SessionSpec::new(source.template.clone(), source.payload.clone());
        spec.metadata = source.metadata.clone();
        spec.timeout_ms = timeout_ms.or(source.timeout_ms);
        spec.on_timeout = source.on_timeout;
        spec.idle_pause_ms = source.idle_pause_ms;
        spec.auto_resume = source.auto_resume;
        spec.restore = Some(record.id.clone());
        // The fork's proxy replaces the same placeholders (they are in its memory and
        // environment) with the same values.
        state
            .held_secrets
            .hold(&new_id, state.held_secrets.values(id));
        let outcome = create_session(state, &new_id, &token, spec, caller).and_then(|()| {
            let info = state
                .manager
                .wait_started(&new_id, std::time::Duration::from_secs(120))
                .map_err(|e| state.manager_error(&new_id, e))?;
            match info.state {
                airlock_sessions::SessionState::Running => Ok(info),
                other => Err(ApiError::Internal(format!(
                    "fork {new_id} could not start ({other}): {}",
                    info.reason.unwrap_or_default()
                ))),
            }
        });
        if outcome.is_err() {
            state.held_secrets.forget(&new_id);
        }
        forks.push(Forked {
            id: new_id,
            token,
            outcome,
        });
    }
    let started: Vec<&str> = forks
        .iter()
        .filter(|f| f.outcome.is_ok())
        .map(|f| f.id.as_str())
        .collect();
    audit(
        state,
        id,
        "fork",
        caller,
        serde_json::json!({ "snapshot": record.id, "forks": started }),
    );
    Ok((record, forks))
}

/// The spec of a live sandbox, or the API's error for one that is not live.
fn spec_of(state: &AppState, id: &str) -> Result<SessionSpec, ApiError> {
    match state.manager.spec(id) {
        Some(spec)
            if state
                .manager
                .get(id)
                .is_some_and(|i| !i.state.is_terminal()) =>
        {
            Ok(spec)
        }
        _ => Err(state.manager_error(id, airlock_sessions::ManagerError::NotFound(id.to_string()))),
    }
}
