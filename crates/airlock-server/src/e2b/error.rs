//! Why an E2B request was refused, and how each of E2B's surfaces says so: the control plane
//! answers `{"code": <HTTP status>, "message"}`, envd's Connect services answer
//! `{"code": "<connect code>", "message"}` with the Connect status table, envd's `/files`
//! answers `{"code": <HTTP status>, "message"}`, and the interpreter answers plain text.

use crate::ApiError;
use airlock_runtime::{AgentError, SandboxError};
use airlock_sessions::ManagerError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A refusal, by Connect code (the richest of the three vocabularies).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum E2bError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    Unauthenticated(String),
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    /// The sandbox is not running (gone, ended, or never existed): E2B's edge answers 502.
    #[error("{0}")]
    SandboxGone(String),
    #[error("{0}")]
    ResourceExhausted(String),
    #[error("{0}")]
    FailedPrecondition(String),
    /// A call's deadline passed (used by the process service).
    #[allow(dead_code)]
    #[error("{0}")]
    DeadlineExceeded(String),
    #[error("{0}")]
    Unimplemented(String),
    #[error("{0}")]
    Internal(String),
}

impl E2bError {
    /// The Connect error code.
    pub fn connect_code(&self) -> &'static str {
        match self {
            E2bError::InvalidArgument(_) => "invalid_argument",
            E2bError::Unauthenticated(_) => "unauthenticated",
            E2bError::PermissionDenied(_) => "permission_denied",
            E2bError::NotFound(_) => "not_found",
            E2bError::AlreadyExists(_) => "already_exists",
            E2bError::SandboxGone(_) => "unavailable",
            E2bError::ResourceExhausted(_) => "resource_exhausted",
            E2bError::FailedPrecondition(_) => "failed_precondition",
            E2bError::DeadlineExceeded(_) => "deadline_exceeded",
            E2bError::Unimplemented(_) => "unimplemented",
            E2bError::Internal(_) => "internal",
        }
    }

    /// The HTTP status of a unary Connect error with this code (Connect's table).
    pub fn connect_status(&self) -> StatusCode {
        match self {
            E2bError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            E2bError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            E2bError::PermissionDenied(_) => StatusCode::FORBIDDEN,
            E2bError::NotFound(_) => StatusCode::NOT_FOUND,
            E2bError::AlreadyExists(_) => StatusCode::CONFLICT,
            // What E2B's edge answers for a sandbox it cannot reach; Connect reads 502 as unavailable.
            E2bError::SandboxGone(_) => StatusCode::BAD_GATEWAY,
            E2bError::ResourceExhausted(_) => StatusCode::TOO_MANY_REQUESTS,
            E2bError::FailedPrecondition(_) => StatusCode::BAD_REQUEST,
            E2bError::DeadlineExceeded(_) => StatusCode::GATEWAY_TIMEOUT,
            E2bError::Unimplemented(_) => StatusCode::NOT_IMPLEMENTED,
            E2bError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether a stream under way ends by dropping its connection rather than with this error
    /// in it: the sandbox ended under it (killed or timed out), where envd's connection drops.
    pub fn drops_stream(&self) -> bool {
        matches!(self, E2bError::SandboxGone(_))
    }

    /// The HTTP status on the plain-HTTP surfaces (control plane, `/files`).
    pub fn http_status(&self) -> StatusCode {
        match self {
            E2bError::FailedPrecondition(_) => StatusCode::CONFLICT,
            other => other.connect_status(),
        }
    }

    /// A Connect unary error response.
    pub fn connect_response(&self) -> Response {
        let body = serde_json::json!({ "code": self.connect_code(), "message": self.to_string() });
        (self.connect_status(), axum::Json(body)).into_response()
    }

    /// A control-plane or `/files` error response: `{"code": <status>, "message"}`.
    pub fn rest_response(&self) -> Response {
        let status = self.http_status();
        let body = serde_json::json!({ "code": status.as_u16(), "message": self.to_string() });
        (status, axum::Json(body)).into_response()
    }

    /// A plain-text error response (the code interpreter's style).
    pub fn text_response(&self) -> Response {
        (self.http_status(), self.to_string()).into_response()
    }

    /// The error for a sandbox the manager refused to lend: not running or not known.
    pub fn from_manager(id: &str, e: ManagerError) -> E2bError {
        match e {
            ManagerError::NotFound(_) | ManagerError::NotRunning { .. } => E2bError::SandboxGone(
                format!("sandbox {id} was not found: it ended, was killed or never existed"),
            ),
            ManagerError::QueueFull { .. } => E2bError::ResourceExhausted(e.to_string()),
            ManagerError::InvalidTimeout { .. } => E2bError::InvalidArgument(e.to_string()),
            ManagerError::AlreadyExists(_) => E2bError::AlreadyExists(e.to_string()),
            ManagerError::ShuttingDown => E2bError::SandboxGone(e.to_string()),
            ManagerError::InvalidConfig(_) => E2bError::Internal(e.to_string()),
            ManagerError::AlreadyPaused(_) => {
                E2bError::FailedPrecondition(format!("sandbox {id} is already paused"))
            }
            ManagerError::NotPaused { .. } => E2bError::FailedPrecondition(e.to_string()),
            ManagerError::PauseFailed { .. } | ManagerError::ResumeFailed { .. } => {
                E2bError::Internal(e.to_string())
            }
            // What E2B's edge answers for a paused sandbox: it is not reachable until resumed.
            ManagerError::PausedNoAutoResume(_) => E2bError::SandboxGone(format!(
                "sandbox {id} is paused; resume it with Sandbox.connect() (or create it with autoResume) to use it"
            )),
        }
    }
}

impl From<SandboxError> for E2bError {
    fn from(e: SandboxError) -> E2bError {
        match e {
            SandboxError::Agent(AgentError::Refused { code, message }) => match code.as_str() {
                "notfound" => E2bError::NotFound(message),
                "permissiondenied" => E2bError::PermissionDenied(message),
                "exists" => E2bError::AlreadyExists(message),
                "busy" => E2bError::FailedPrecondition(message),
                "limit" => E2bError::ResourceExhausted(message),
                "unsupported" => E2bError::Unimplemented(message),
                "io" => E2bError::Internal(message),
                _ => E2bError::InvalidArgument(message),
            },
            SandboxError::Agent(AgentError::Closed) => E2bError::SandboxGone(
                "the sandbox's agent connection closed: the sandbox ended".into(),
            ),
            other => E2bError::Internal(other.to_string()),
        }
    }
}

impl From<ApiError> for E2bError {
    fn from(e: ApiError) -> E2bError {
        let msg = e.to_string();
        match e {
            ApiError::NotFound(_) => E2bError::NotFound(msg),
            ApiError::Unauthorized(_) => E2bError::Unauthenticated(msg),
            ApiError::Forbidden(_) => E2bError::PermissionDenied(msg),
            ApiError::Invalid(_) => E2bError::InvalidArgument(msg),
            ApiError::Conflict(_) => E2bError::AlreadyExists(msg),
            ApiError::QueueFull(_) => E2bError::ResourceExhausted(msg),
            ApiError::NotRunning(_) => E2bError::SandboxGone(msg),
            ApiError::Internal(_) => E2bError::Internal(msg),
        }
    }
}
