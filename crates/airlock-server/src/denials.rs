//! The latest refusals of each live sandbox, as structured values ([`Denial`]), for its view
//! (`GET /v1/sandboxes/{id}`): what was refused, the rule, and the grant that would allow it.
//! Every refusal is also in the sandbox's events (the network event's `denial`); this keeps
//! the last few at hand while the sandbox lives, and forgets them when it ends.

use airlock_policy::Denial;
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

/// Refusals kept per sandbox, newest last.
pub const KEPT: usize = 20;

/// Every live sandbox's latest refusals.
#[derive(Default)]
pub struct RecentDenials {
    by_sandbox: Mutex<HashMap<String, VecDeque<Denial>>>,
}

impl RecentDenials {
    /// Records one refusal of sandbox `id`.
    pub fn record(&self, id: &str, denial: Denial) {
        let mut m = self
            .by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let list = m.entry(id.to_string()).or_default();
        if list.len() >= KEPT {
            list.pop_front();
        }
        list.push_back(denial);
    }

    /// Sandbox `id`'s latest refusals, oldest first.
    pub fn of(&self, id: &str) -> Vec<Denial> {
        self.by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Sandbox `id` ended.
    pub fn forget(&self, id: &str) {
        self.by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}
