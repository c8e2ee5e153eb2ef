//! Approvals across the seam: a box whose owner answers (the server) is given an
//! [`ApprovalSink`] at start; the box's proxy, in its host process, hands each held
//! connection's request to it as a typed message, and the owner answers through
//! [`BoxInstance::answer_approval`](super::BoxInstance::answer_approval).

use airlock_policy::ApprovalRequest;

/// Told about a box's held connections (from any thread). Must not block: the box's host
/// process reader calls it.
pub trait ApprovalSink: Send + Sync {
    /// A connection is held until `request` is answered or its deadline passes.
    fn requested(&self, request: ApprovalRequest);
    /// Request `id` is no longer waiting: its deadline passed, unanswered (it was refused).
    fn withdrawn(&self, id: u64);
}

/// Answers a box's held connections from any thread, while the box itself is busy elsewhere
/// (the MCP session's box runs the very command whose connection is held): see
/// [`BoxInstance::approval_answerer`](super::BoxInstance::approval_answerer).
pub trait ApprovalAnswerer: Send + Sync {
    /// As [`BoxInstance::answer_approval`](super::BoxInstance::answer_approval).
    fn answer(
        &self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), super::BackendError>;
}
