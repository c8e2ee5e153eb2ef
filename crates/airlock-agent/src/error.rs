//! The agent's own errors (setup and connection failures) and the mapping of I/O errors to the
//! protocol's stable error codes.

use airlock_protocol::{ErrorCode, HelloError, ProtocolError};
use std::io;

/// Why [`crate::serve`] stopped other than the host closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A setup step of the event loop failed.
    #[error("agent setup failed at {stage}")]
    Setup {
        stage: &'static str,
        #[source]
        source: io::Error,
    },
    /// The host broke the framing; the connection was closed.
    #[error("the host violated the framing; connection closed")]
    Framing(#[from] ProtocolError),
    /// The host's hello was refused; the connection was closed.
    #[error("the host's hello was refused")]
    Hello(#[from] HelloError),
    /// The connection failed.
    #[error("the host connection failed")]
    Connection(#[source] io::Error),
    /// Waiting for events failed.
    #[error("polling failed")]
    Poll(#[source] io::Error),
}

impl AgentError {
    pub(crate) fn setup(stage: &'static str) -> impl FnOnce(io::Error) -> AgentError {
        move |source| AgentError::Setup { stage, source }
    }
}

/// The stable protocol code for an I/O error.
pub fn code_of(e: &io::Error) -> ErrorCode {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => ErrorCode::NotFound,
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => ErrorCode::PermissionDenied,
        Some(libc::EEXIST) | Some(libc::ENOTEMPTY) => ErrorCode::Exists,
        Some(libc::EINVAL)
        | Some(libc::ENOTDIR)
        | Some(libc::EISDIR)
        | Some(libc::ENAMETOOLONG)
        | Some(libc::ELOOP) => ErrorCode::Invalid,
        Some(libc::EBUSY) | Some(libc::ETXTBSY) => ErrorCode::Busy,
        Some(libc::ENOSYS) | Some(libc::ENOTTY) | Some(libc::EOPNOTSUPP) => ErrorCode::Unsupported,
        Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
            ErrorCode::Limit
        }
        _ => match e.kind() {
            io::ErrorKind::NotFound => ErrorCode::NotFound,
            io::ErrorKind::PermissionDenied => ErrorCode::PermissionDenied,
            io::ErrorKind::AlreadyExists => ErrorCode::Exists,
            io::ErrorKind::InvalidInput => ErrorCode::Invalid,
            io::ErrorKind::Unsupported => ErrorCode::Unsupported,
            _ => ErrorCode::Io,
        },
    }
}
