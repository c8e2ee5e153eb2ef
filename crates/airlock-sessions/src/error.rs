//! Why a session operation was refused.

use super::SessionState;

/// Why a [`SessionManager`](super::SessionManager) refused an operation.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error("no session `{0}` is known; list the sessions to see which exist")]
    NotFound(String),
    #[error("session `{id}` is {state}, not running; {}", what_to_do(*state))]
    NotRunning { id: String, state: SessionState },
    #[error("a session with id `{0}` exists already; choose another id")]
    AlreadyExists(String),
    #[error(
        "all {max_running} slots are busy and the queue is full ({max_queued} sessions wait); retry later or kill a session"
    )]
    QueueFull {
        max_running: usize,
        max_queued: usize,
    },
    #[error("a timeout of {requested_ms} ms is out of range; give between 1 and {max_ms} ms")]
    InvalidTimeout { requested_ms: i64, max_ms: i64 },
    #[error("the server is shutting down and starts no new sessions")]
    ShuttingDown,
    #[error("the session manager's configuration cannot work: {0}")]
    InvalidConfig(String),
    #[error("session `{0}` is paused already; resume it (or connect to it) to use it")]
    AlreadyPaused(String),
    #[error("session `{id}` is {state}, not paused; only a paused session resumes")]
    NotPaused { id: String, state: SessionState },
    #[error("session `{id}` could not be paused and keeps running: {reason}")]
    PauseFailed { id: String, reason: String },
    #[error("session `{id}` could not be resumed and stays paused: {reason}")]
    ResumeFailed { id: String, reason: String },
    #[error(
        "session `{0}` is paused and resumes only on request; resume it (or connect to it) first"
    )]
    PausedNoAutoResume(String),
}

/// What the caller of a session that is not running can do about it.
fn what_to_do(state: SessionState) -> &'static str {
    match state {
        SessionState::Paused | SessionState::Resuming => "resume it (or connect to it) first",
        SessionState::Queued | SessionState::Starting => "wait until it is running",
        _ => "create a new session instead",
    }
}

#[cfg(test)]
mod tests {
    use super::{ManagerError, SessionState};

    #[test]
    fn a_session_that_is_not_running_is_told_what_can_be_done() {
        let says = |state| {
            ManagerError::NotRunning {
                id: "s".into(),
                state,
            }
            .to_string()
        };
        assert!(says(SessionState::Paused).ends_with("resume it (or connect to it) first"));
        assert!(says(SessionState::Starting).ends_with("wait until it is running"));
        for ended in [
            SessionState::Killed,
            SessionState::Expired,
            SessionState::Failed,
        ] {
            assert!(
                says(ended).ends_with("create a new session instead"),
                "{ended:?}"
            );
        }
    }
}
