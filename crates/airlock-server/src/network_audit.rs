//! Network decisions of proxied boxes, into the store: each box's backend hands every decision
//! to a [`StoreNetworkSink`] as a typed event the moment it is made, and the sink records it in
//! the store's audit log and in the sandbox's events.

use crate::denials::RecentDenials;
use crate::observer::{lock, SharedStore};
use airlock_runtime::backend::{NetworkEvent, NetworkSink};
use airlock_store::AuditEntry;
use std::sync::Arc;

/// Records the network decisions of one sandbox.
pub struct StoreNetworkSink {
    store: SharedStore,
    sandbox_id: String,
    denials: Arc<RecentDenials>,
}

impl StoreNetworkSink {
    /// Decisions go into `store`; refusals also into `denials` (the sandbox's view).
    pub fn new(
        store: SharedStore,
        sandbox_id: String,
        denials: Arc<RecentDenials>,
    ) -> StoreNetworkSink {
        StoreNetworkSink {
            store,
            sandbox_id,
            denials,
        }
    }
}

impl NetworkSink for StoreNetworkSink {
    fn network_event(&self, event: NetworkEvent) {
        if let Some(d) = &event.denial {
            self.denials.record(&self.sandbox_id, d.clone());
        }
        let Ok(summary) = serde_json::to_value(&event) else {
            return;
        };
        let store = lock(&self.store);
        let _ = store.add_audit(&AuditEntry {
            sandbox_id: Some(self.sandbox_id.clone()),
            kind: "network".into(),
            actor: "proxy".into(),
            summary: summary.clone(),
            time_ms: i64::try_from(event.time_ms).unwrap_or(i64::MAX),
        });
        let _ = store.add_event(&self.sandbox_id, "network", &summary);
    }
}
