//! Why a backend could not do what was asked.

use airlock_policy::BackendKind;

/// Errors of the backend seam. Messages are sentences a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The kind exists in the vocabulary but this build of airlock has no implementation.
    #[error("the {0} backend is not built yet in this airlock; `airlock check` lists the backends it has")]
    NotBuilt(BackendKind),
    /// The backend exists but this host cannot run it.
    #[error("the {kind} backend cannot run on this host: {why}")]
    Unavailable { kind: BackendKind, why: String },
    /// The box does not have this capability (pause, resume, snapshot, a changed egress policy).
    #[error("a {kind} box cannot {what}: {why}")]
    Unsupported {
        kind: BackendKind,
        what: &'static str,
        why: String,
    },
    /// The box could not be planned or started.
    #[error("the box could not start: {0}")]
    Start(String),
    /// The request was refused as invalid (what was wrong and how to fix it).
    #[error("{0}")]
    Invalid(String),
    /// A one-shot run could not happen (the backend's own sentence, as it gave it).
    #[error("{0}")]
    Run(String),
    /// What was answered is not waiting any more (an approval already answered or timed out).
    #[error("{0}")]
    NotPending(String),
    /// The box has ended; nothing more can be asked of it.
    #[error("the box has ended ({0})")]
    Ended(String),
    /// The box's host side did not answer as it should.
    #[error("the box's host side failed: {0}")]
    Host(String),
}
