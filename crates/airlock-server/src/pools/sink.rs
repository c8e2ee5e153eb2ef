//! Where a pooled box's network decisions go: nowhere until it is claimed, then to its
//! sandbox's record. A box nobody has claimed runs nothing, so it has nothing to report; were a
//! decision made before the claim, it belongs to no sandbox and is not shown to the claimant.

use airlock_runtime::backend::{NetworkEvent, NetworkSink};
use std::sync::{Arc, OnceLock};

/// A [`NetworkSink`] bound to its sandbox once, at claim.
#[derive(Default)]
pub struct ClaimSink {
    target: OnceLock<Arc<dyn NetworkSink>>,
}

impl ClaimSink {
    /// Sends every later decision to `target`. A second bind is ignored (a box is claimed once).
    pub fn bind(&self, target: Arc<dyn NetworkSink>) {
        let _ = self.target.set(target);
    }
}

impl NetworkSink for ClaimSink {
    fn network_event(&self, event: NetworkEvent) {
        if let Some(t) = self.target.get() {
            t.network_event(event);
        }
    }
}
