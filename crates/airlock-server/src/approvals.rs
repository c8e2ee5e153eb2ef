//! Held connections of the server's boxes, parked here by sandbox id until someone answers
//! them over the API (`GET/POST /v1/sandboxes/{id}/approvals`). Each box's proxy (in the box's
//! host process) holds the connection itself and is the authority on whether a request still
//! waits; this is the server's view of what was asked, fed by the seam's [`ApprovalSink`] and
//! emptied as requests are answered, time out, or the sandbox ends.

use airlock_policy::ApprovalRequest;
use airlock_runtime::backend::ApprovalSink;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// Finished requests remembered per sandbox (to answer 409 rather than 404 for them).
const MAX_FINISHED: usize = 1024;
/// Waiting requests kept per sandbox; the proxy holds at most its connection cap, so more is a
/// runaway box: the oldest are dropped from the view (they still time out in the proxy).
const MAX_PENDING: usize = 4096;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Answered,
    TimedOut,
}

/// What is known about request `n` of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Waiting(Box<ApprovalRequest>),
    Finished(Finished),
    Unknown,
}

#[derive(Default)]
struct BoxApprovals {
    pending: BTreeMap<u64, ApprovalRequest>,
    finished: VecDeque<(u64, Finished)>,
}

impl BoxApprovals {
    fn finish(&mut self, n: u64, how: Finished) {
        self.pending.remove(&n);
        if self.finished.len() >= MAX_FINISHED {
            self.finished.pop_front();
        }
        self.finished.push_back((n, how));
    }
}

/// Every sandbox's held connections.
#[derive(Default)]
pub struct ServerApprovals {
    by_sandbox: Mutex<HashMap<String, BoxApprovals>>,
}

impl ServerApprovals {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, BoxApprovals>) -> R) -> R {
        f(&mut self
            .by_sandbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
    }

    /// The sink for a new box of sandbox `id`: what an earlier box of it asked is forgotten
    /// (a resumed or restored box has a new proxy, whose requests are numbered anew).
    pub fn sink(self: &Arc<Self>, id: &str) -> Arc<dyn ApprovalSink> {
        self.with(|m| m.insert(id.to_string(), BoxApprovals::default()));
        Arc::new(SandboxApprovals {
            all: Arc::clone(self),
            id: id.to_string(),
        })
    }

    /// Sandbox `id`'s waiting requests, oldest first.
    pub fn pending(&self, id: &str) -> Vec<ApprovalRequest> {
        self.with(|m| {
            m.get(id)
                .map(|b| b.pending.values().cloned().collect())
                .unwrap_or_default()
        })
    }

    /// What is known about sandbox `id`'s request `n`.
    pub fn lookup(&self, id: &str, n: u64) -> Lookup {
        self.with(|m| {
            let Some(b) = m.get(id) else {
                return Lookup::Unknown;
            };
            if let Some(r) = b.pending.get(&n) {
                return Lookup::Waiting(Box::new(r.clone()));
            }
            match b.finished.iter().rev().find(|(f, _)| *f == n) {
                Some((_, how)) => Lookup::Finished(*how),
                None => Lookup::Unknown,
            }
        })
    }

    /// Sandbox `id`'s request `n` ended `how`.
    pub fn finish(&self, id: &str, n: u64, how: Finished) {
        self.with(|m| {
            if let Some(b) = m.get_mut(id) {
                b.finish(n, how);
            }
        });
    }

    /// Sandbox `id` ended: its box's proxy (and every connection it held) is gone.
    pub fn forget(&self, id: &str) {
        self.with(|m| m.remove(id));
    }
}

/// The seam's sink for one sandbox's box.
struct SandboxApprovals {
    all: Arc<ServerApprovals>,
    id: String,
}

impl ApprovalSink for SandboxApprovals {
    fn requested(&self, request: ApprovalRequest) {
        self.all.with(|m| {
            let b = m.entry(self.id.clone()).or_default();
            if b.pending.len() >= MAX_PENDING {
                b.pending.pop_first();
            }
            b.pending.insert(request.id, request);
        });
    }

    fn withdrawn(&self, n: u64) {
        self.all.finish(&self.id, n, Finished::TimedOut);
    }
}

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
