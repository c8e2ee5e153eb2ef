//! Who is asked.

use super::request::ApprovalRequest;

/// Asks someone about held connections. Implementations hold the
/// [`PendingQueue`](super::PendingQueue) they answer through, from any thread, at any time; an
/// answer after the deadline is refused by the queue.
pub trait Approver: Send + Sync {
    /// Who answers, as the audit log names them (`program: CMD`, `terminal`, `api`).
    fn name(&self) -> String;
    /// Asks about `request`. Must not block: the proxy's event loop calls it.
    fn ask(&self, request: &ApprovalRequest);
    /// `id` is no longer waiting (its deadline passed); a prompt for it can be taken down.
    fn withdrawn(&self, id: u64) {
        let _ = id;
    }
}
