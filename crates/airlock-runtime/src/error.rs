//! Why an operation on a box failed, whichever backend holds it.

use crate::backend::BackendError;
use crate::AgentError;

/// Why a sandbox operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The native box could not be planned or started (its own error, as the native crate
    /// reports it).
    #[error(transparent)]
    Run(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("the box could not be set up ({stage}): {message}")]
    Setup { stage: String, message: String },
    #[error("cannot prepare the sandbox: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Backend(#[from] BackendError),
}
