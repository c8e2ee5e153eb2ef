//! Keeps the store in step with the session manager: a sandbox is recorded when the manager
//! first reports it, then every change of state or deadline is written, each as an event.
//! A sandbox that ends takes its E2B state, snapshots and held secret values with it.

use airlock_sessions::{SessionInfo, SessionObserver, SessionState};
use airlock_store::{NewSandbox, SandboxState, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// What the store needs about a sandbox that the manager does not know: set by the create
/// handler before it asks the manager, taken when the sandbox is first recorded.
#[derive(Debug, Clone)]
pub struct Pending {
    pub token_hash: String,
    pub policy: serde_json::Value,
}

/// The shared store. One SQLite connection; every use is short.
pub type SharedStore = Arc<Mutex<Store>>;

/// Locks the store (a poisoned lock still guards a usable connection).
pub fn lock(store: &SharedStore) -> std::sync::MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes the manager's changes to the store, and drops the E2B gateway's state of a sandbox
/// when it ends.
pub struct StoreObserver {
    store: SharedStore,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    e2b: Arc<crate::e2b::E2bState>,
    snapshots: Arc<crate::service::snapshots::SnapshotService>,
    secrets: Arc<crate::held_secrets::HeldSecrets>,
    approvals: Arc<crate::approvals::ServerApprovals>,
    denials: Arc<crate::denials::RecentDenials>,
}

impl StoreObserver {
    pub fn new(
        store: SharedStore,
        pending: Arc<Mutex<HashMap<String, Pending>>>,
        e2b: Arc<crate::e2b::E2bState>,
        snapshots: Arc<crate::service::snapshots::SnapshotService>,
        secrets: Arc<crate::held_secrets::HeldSecrets>,
    ) -> StoreObserver {
        StoreObserver {
            store,
            pending,
            e2b,
            snapshots,
            secrets,
            approvals: Arc::default(),
            denials: Arc::default(),
        }
    }

    /// The held connections to drop when a sandbox ends.
    pub fn with_approvals(mut self, approvals: Arc<crate::approvals::ServerApprovals>) -> Self {
        self.approvals = approvals;
        self
    }

    /// The latest refusals to drop when a sandbox ends.
    pub fn with_denials(mut self, denials: Arc<crate::denials::RecentDenials>) -> Self {
        self.denials = denials;
        self
    }
}

/// The store's name for a manager state.
pub fn store_state(s: SessionState) -> SandboxState {
    match s {
        SessionState::Queued => SandboxState::Queued,
        SessionState::Starting => SandboxState::Starting,
        SessionState::Running => SandboxState::Running,
        SessionState::Paused => SandboxState::Paused,
        SessionState::Resuming => SandboxState::Resuming,
        SessionState::Killed => SandboxState::Killed,
        SessionState::Expired => SandboxState::Expired,
        SessionState::Failed => SandboxState::Failed,
        SessionState::Dead => SandboxState::Dead,
    }
}

impl SessionObserver for StoreObserver {
    fn session_changed(&self, info: &SessionInfo) {
        self.sessions_changed(std::slice::from_ref(info));
    }

    /// Every change told together is recorded in one commit (a pooled create's `starting` and
    /// `running` were two, each writing the record's pages and an event's again); if that
    /// commit fails, each change is tried in a commit of its own, so one bad change loses no
    /// other.
    fn sessions_changed(&self, infos: &[SessionInfo]) {
        for info in infos {
            self.forget_if_ended(info);
        }
        let store = lock(&self.store);
        if infos.len() > 1 {
            let together = store.in_transaction(|store| {
                infos
                    .iter()
                    .map(|info| self.record_in(store, info))
                    .collect::<Result<Vec<bool>, _>>()
            });
            if let Ok(inserted) = together {
                for (info, _) in infos.iter().zip(inserted).filter(|(_, new)| *new) {
                    self.recorded(&info.id);
                }
                return;
            }
        }
        for info in infos {
            match store.in_transaction(|store| self.record_in(store, info)) {
                Ok(true) => self.recorded(&info.id),
                Ok(false) => {}
                Err(e) => eprintln!(
                    "airlock serve: cannot record sandbox {} in the store: {e}",
                    info.id
                ),
            }
        }
    }
}

impl StoreObserver {
    /// What an ended sandbox leaves behind outside the store goes with it.
    fn forget_if_ended(&self, info: &SessionInfo) {
        if store_state(info.state).is_terminal() {
            self.e2b.forget_box(&info.id);
            // An ended sandbox's snapshots go with it.
            self.snapshots.delete_all_of(&info.id);
            // Its secrets' values too: no box of it starts again.
            self.secrets.forget(&info.id);
            // Its box's proxy, and every connection it held, is gone.
            self.approvals.forget(&info.id);
            self.denials.forget(&info.id);
        }
    }

    /// A sandbox's record was committed: what the create handler left for it is no longer
    /// needed.
    fn recorded(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Writes one change into `store`, inside the caller's transaction (the record and its
    /// event, or the change's writes, land together). `true` when it made the sandbox's
    /// record; the caller then forgets its pending entry once committed ([`Self::recorded`]),
    /// so a commit that fails leaves it for another try.
    fn record_in(
        &self,
        store: &airlock_store::Store,
        info: &SessionInfo,
    ) -> Result<bool, airlock_store::StoreError> {
        let state = store_state(info.state);
        let detail = serde_json::json!({ "state": state.as_str(), "reason": info.reason, "deadline_ms": info.deadline_ms });
        match store.sandbox_progress(&info.id)? {
            None => {
                let pending = self
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&info.id)
                    .cloned();
                let Some(pending) = pending else {
                    return Ok(false);
                };
                store.insert_sandbox(&NewSandbox {
                    id: info.id.clone(),
                    template: info.template.clone(),
                    policy: pending.policy,
                    metadata: info.metadata.clone(),
                    token_hash: pending.token_hash,
                    created_ms: info.created_ms,
                    deadline_ms: info.deadline_ms,
                    state,
                })?;
                if let Some(reason) = &info.reason {
                    store.set_state(&info.id, state, Some(reason))?;
                }
                store.add_event(&info.id, "state", &detail)?;
                Ok(true)
            }
            Some((recorded_state, recorded_deadline)) => {
                if recorded_deadline != info.deadline_ms {
                    store.set_deadline(&info.id, info.deadline_ms)?;
                }
                if recorded_state != state && !recorded_state.is_terminal() {
                    store.set_state(&info.id, state, info.reason.as_deref())?;
                    store.add_event(&info.id, "state", &detail)?;
                } else if recorded_deadline != info.deadline_ms {
                    store.add_event(&info.id, "deadline", &detail)?;
                }
                Ok(false)
            }
        }
    }
}

#[cfg(test)]
#[path = "observer_tests.rs"]
mod tests;
