//! What every request handler shares: the session manager, the store, and who may do what.

use crate::factory::SandboxFactory;
use crate::observer::{Pending, SharedStore};
use airlock_sessions::SessionManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The server's shared state (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    pub manager: Arc<SessionManager<SandboxFactory>>,
    pub store: SharedStore,
    /// SHA-256 of the API key.
    pub api_key_hash: Arc<String>,
    /// Token hash → sandbox id, for telling another box's token (403) from a bad key (401).
    pub tokens: Arc<Mutex<HashMap<String, String>>>,
    /// What the observer needs to record a sandbox the manager is about to report.
    pub pending: Arc<Mutex<HashMap<String, Pending>>>,
    /// The backends boxes can be started with.
    pub backends: airlock_runtime::backend::Backends,
    /// The backend of sandboxes whose create request names none.
    pub default_backend: airlock_policy::BackendKind,
    /// The E2B gateway's own state (its API key, raw sandbox tokens for signed URLs).
    pub e2b: Arc<crate::e2b::E2bState>,
    /// Secret values of sandboxes about to start (never in the store).
    pub held_secrets: Arc<crate::held_secrets::HeldSecrets>,
    /// The templates sandboxes can start from.
    pub templates: Arc<crate::template_catalog::TemplateCatalog>,
    /// Template builds through E2B's Template SDK.
    pub template_builds: Arc<crate::e2b::templates::TemplateService>,
    /// Held connections of the boxes, waiting for an answer over the API.
    pub approvals: Arc<crate::approvals::ServerApprovals>,
    /// The latest refusals of each live sandbox (its view shows them).
    pub denials: Arc<crate::denials::RecentDenials>,
}

/// Work in a box that does not hold its handle (a command, a code execution): while it lives,
/// the box is not idle (an idle pause waits for it). Owned, so a stream that outlives its
/// request handler (a command's output relayed to its client) can hold it to the end.
pub struct Work {
    manager: Arc<SessionManager<SandboxFactory>>,
    id: String,
}

impl Drop for Work {
    fn drop(&mut self) {
        self.manager.end_work(&self.id);
    }
}

impl AppState {
    /// Marks work in sandbox `id` until the returned guard is dropped.
    pub fn working(&self, id: &str) -> Work {
        self.manager.begin_work(id);
        Work {
            manager: Arc::clone(&self.manager),
            id: id.to_string(),
        }
    }

    /// Runs blocking work (the manager, the store, a box) off the async threads.
    pub async fn blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(AppState) -> Result<R, crate::ApiError> + Send + 'static,
    ) -> Result<R, crate::ApiError> {
        let state = self.clone();
        tokio::task::spawn_blocking(move || f(state))
            .await
            .map_err(|_| {
                crate::ApiError::Internal(
                    "the request's worker failed; retry, and report it if it persists".into(),
                )
            })?
    }

    /// The API error for a manager refusal about sandbox `id`: one the manager no longer knows
    /// but the store does (it ended, e.g. in a previous run of the server) is not running.
    pub fn manager_error(&self, id: &str, e: airlock_sessions::ManagerError) -> crate::ApiError {
        if let airlock_sessions::ManagerError::NotFound(_) = e {
            if let Ok(Some(rec)) = crate::observer::lock(&self.store).get_sandbox(id) {
                return crate::ApiError::NotRunning(format!(
                    "sandbox {id} is {}, not running; create a new sandbox instead",
                    rec.state
                ));
            }
        }
        e.into()
    }
}
