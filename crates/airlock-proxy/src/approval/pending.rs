//! The requests waiting for an answer. Connections held for the same destination at the same
//! time wait for one request (one answer lets them all through or refuses them all).

use super::answer::Answer;
use super::error::ApprovalError;
use super::request::ApprovalRequest;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::oneshot;

struct Pending {
    request: ApprovalRequest,
    waiters: Vec<oneshot::Sender<Answer>>,
}

/// Held connections' requests, answerable from any thread.
#[derive(Default)]
pub struct PendingQueue {
    next: AtomicU64,
    map: Mutex<BTreeMap<u64, Pending>>,
}

/// A held connection's place in the queue.
pub(crate) struct Waiting {
    pub id: u64,
    pub answer: oneshot::Receiver<Answer>,
    /// The request is new (the approver must be asked); `false`: it joined one already asked.
    pub is_new: bool,
    pub request: ApprovalRequest,
}

impl PendingQueue {
    pub fn new() -> PendingQueue {
        PendingQueue::default()
    }

    /// Joins the pending request for the same protocol, host and port, or makes one with
    /// `make(id)`.
    pub(crate) fn wait(&self, make: impl FnOnce(u64) -> ApprovalRequest) -> Option<Waiting> {
        let mut map = self.map.lock().ok()?;
        let (tx, rx) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let request = make(id);
        if let Some(p) = map.values_mut().find(|p| {
            p.request.host == request.host
                && p.request.port == request.port
                && p.request.protocol == request.protocol
        }) {
            p.waiters.push(tx);
            return Some(Waiting {
                id: p.request.id,
                answer: rx,
                is_new: false,
                request: p.request.clone(),
            });
        }
        map.insert(
            id,
            Pending {
                request: request.clone(),
                waiters: vec![tx],
            },
        );
        Some(Waiting {
            id,
            answer: rx,
            is_new: true,
            request,
        })
    }

    /// A request made with `make(id)` for an approver asked from outside the proxy (the MCP
    /// server's `request_network_grant`): its answer arrives on the receiver. Whoever opened it
    /// [`PendingQueue::withdraw`]s it at its deadline.
    pub fn open(
        &self,
        make: impl FnOnce(u64) -> ApprovalRequest,
    ) -> Option<(ApprovalRequest, oneshot::Receiver<Answer>)> {
        self.wait(make).map(|w| (w.request, w.answer))
    }

    /// Answers request `id`: every connection held for it gets `answer`.
    pub fn answer(&self, id: u64, answer: Answer) -> Result<(), ApprovalError> {
        let pending = self
            .map
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&id))
            .ok_or(ApprovalError::NotPending { id })?;
        for w in pending.waiters {
            let _ = w.send(answer.clone());
        }
        Ok(())
    }

    /// Takes request `id` off the queue unanswered (its deadline passed); `false` if it was not
    /// waiting any more.
    pub fn withdraw(&self, id: u64) -> bool {
        self.map
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&id))
            .is_some()
    }

    /// Refuses every waiting request in `by`'s name (the approver went away).
    pub fn deny_all(&self, by: &str) {
        let ids: Vec<u64> = self
            .map
            .lock()
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for id in ids {
            let _ = self.answer(id, Answer::deny(by));
        }
    }

    /// The waiting requests, oldest first.
    pub fn list(&self) -> Vec<ApprovalRequest> {
        self.map
            .lock()
            .map(|m| m.values().map(|p| p.request.clone()).collect())
            .unwrap_or_default()
    }
}

/// Applies the owner's answer to request `id`, given in `by`'s name: the same checks as an
/// approver program's line (a time to live between 1 s and a day). Scope `save` says the
/// owner has already written the grant into its policy file (the terminal approver of a
/// one-shot run, asking on the owner's side): the box grants it for the run and records it
/// as saved. Owners that cannot save (the server's API) refuse `save` before they get here.
pub fn answer_from_owner(
    pending: &PendingQueue,
    id: u64,
    answer: airlock_policy::ApprovalAnswer,
    by: &str,
) -> Result<(), ApprovalError> {
    let answer = super::answer::AnswerLine::of(id, answer).into_answer(by)?;
    pending.answer(id, answer)
}
