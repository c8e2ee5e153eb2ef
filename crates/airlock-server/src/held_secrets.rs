//! The values of the secrets given on `POST /v1/sandboxes`, held in this process's memory
//! only, for each start of the sandbox's box (its host process then holds them for the
//! proxy). They are kept while the sandbox lives (a box paused without its memory starts again
//! on resume; a fork gets its source's) and dropped when it ends, or with the server: a server
//! restarted holds none, and a box of an earlier run refuses to start its proxy. They are
//! never in the store: the stored policy has names, hosts and
//! placeholders only. While any is held, the process is not dumpable (no core dump, no
//! ptrace by the same user).

use airlock_policy::SecretValues;
use std::collections::HashMap;
use std::sync::{Mutex, Once, PoisonError};

/// Secret values by sandbox id, waiting for the sandbox's start.
#[derive(Default)]
pub struct HeldSecrets {
    by_sandbox: Mutex<HashMap<String, SecretValues>>,
}

impl HeldSecrets {
    /// Holds `values` for sandbox `id` (nothing when empty).
    pub fn hold(&self, id: &str, values: SecretValues) {
        if values == SecretValues::default() {
            return;
        }
        not_dumpable();
        self.by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), values);
    }

    /// Sandbox `id`'s values, for a start of its box (kept: a box paused without its memory
    /// starts again on resume).
    pub fn values(&self, id: &str) -> SecretValues {
        self.by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets sandbox `id`'s values (its create failed, or it ended).
    pub fn forget(&self, id: &str) {
        self.by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// Marks the process not dumpable, once: its memory holds secret values now.
pub(crate) fn not_dumpable() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments; it only changes this process's dump flag.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    });
}
