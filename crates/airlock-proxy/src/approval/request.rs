//! What an approver is asked: [`ApprovalRequest`], data shared with the policy crate (it
//! crosses the host process's control socket and the server's API unchanged).

pub use airlock_policy::ApprovalRequest;
