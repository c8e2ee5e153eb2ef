//! Sandboxes below both APIs: registering and creating a session, recording what was done to a
//! sandbox, and the rules shared by the native create and E2B's.

use crate::auth::Caller;
use crate::checks;
use crate::observer::{lock, Pending};
use crate::secrets::hash;
use crate::state::AppState;
use crate::ApiError;
use airlock_sessions::SessionSpec;
use airlock_store::AuditEntry;
use std::collections::BTreeMap;
use std::sync::PoisonError;

/// Registers and creates a session (on a blocking thread): its token is recorded for both
/// APIs (hash for the native API, raw for signed E2B file URLs), the manager starts or queues
/// its box, and the creation is audited. On refusal nothing is left behind.
pub(crate) fn create_session(
    state: &AppState,
    id: &str,
    token: &str,
    spec: SessionSpec,
    caller: &Caller,
) -> Result<(), ApiError> {
    let token_hash = hash(token);
    let policy = spec.payload.clone();
    state
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            id.to_string(),
            Pending {
                token_hash: token_hash.clone(),
                policy,
            },
        );
    // Tokens of ended sandboxes are forgotten here, so both maps stay as small as the live set
    // (this one is only what tells a token of another sandbox, 403, from a wrong one, 401).
    let live = |other: &str| {
        state
            .manager
            .get(other)
            .is_some_and(|i| !i.state.is_terminal())
    };
    {
        let mut tokens = state.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        tokens.retain(|_, other| live(other));
        tokens.insert(token_hash.clone(), id.to_string());
    }
    state.e2b.retain_live(live);
    state.e2b.remember_token(id, token);
    if let Err(e) = state.manager.create(id.to_string(), spec) {
        state
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        state
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token_hash);
        state.e2b.forget_token(id);
        return Err(e.into());
    }
    // Whether the box came from a pool (a create still queued has not tried yet).
    let summary = match state.manager.factory().pools().take_note(id) {
        Some(note) => serde_json::json!({ "pool": note }),
        None => serde_json::json!({}),
    };
    audit(state, id, "create", caller, summary);
    Ok(())
}

/// Records an operation on a sandbox in the audit log and its event history. Failures to record
/// are reported on stderr, never to the caller whose operation already happened.
pub(crate) fn audit(
    state: &AppState,
    id: &str,
    kind: &str,
    caller: &Caller,
    summary: serde_json::Value,
) {
    let store = lock(&state.store);
    let entry = AuditEntry {
        sandbox_id: Some(id.to_string()),
        kind: kind.to_string(),
        actor: caller.actor(),
        summary: summary.clone(),
        time_ms: now_ms(),
    };
    // Both in one commit.
    if let Err(e) = store.in_transaction(|store| {
        store.add_audit(&entry)?;
        store.add_event(id, kind, &summary)
    }) {
        eprintln!("airlock serve: cannot record {kind} on sandbox {id}: {e}");
    }
}

fn now_ms() -> i64 {
    use airlock_sessions::Clock;
    airlock_sessions::SystemClock.now_ms()
}

/// A sandbox's life (`timeout`, whole seconds) in milliseconds; shared with E2B's control plane.
pub(crate) fn timeout_ms(seconds: u64) -> Result<i64, ApiError> {
    Ok(checks::sandbox_timeout_ms("timeout", seconds)?)
}

/// A sandbox's metadata within bounds; shared with E2B's control plane.
pub(crate) fn check_metadata(metadata: &BTreeMap<String, String>) -> Result<(), ApiError> {
    Ok(checks::metadata("metadata", metadata)?)
}

/// The spec a recorded sandbox was created with, as far as the store keeps it (its template,
/// labels and policy; the lifecycle settings take their defaults): for a paused sandbox taken
/// back after a restart.
pub(crate) fn spec_of_record(rec: &airlock_store::SandboxRecord) -> SessionSpec {
    let mut spec = SessionSpec::new(rec.template.clone(), rec.policy.clone());
    spec.metadata = rec.metadata.clone();
    spec
}
