//! What the API answers when a request cannot be served: a JSON body
//! `{"error": {"code", "message"}}` with the status that matches the code.

use airlock_runtime::backend::BackendError;
use airlock_runtime::{AgentError, SandboxError};
use airlock_sessions::ManagerError;
use airlock_store::StoreError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why a request was refused. The message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    QueueFull(String),
    #[error("{0}")]
    NotRunning(String),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The machine-readable code, as it appears in the body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not_found",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::Invalid(_) => "invalid",
            ApiError::Conflict(_) => "conflict",
            ApiError::QueueFull(_) => "queue_full",
            ApiError::NotRunning(_) => "not_running",
            ApiError::Internal(_) => "internal",
        }
    }

    /// The HTTP status that goes with the code.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Invalid(_) => StatusCode::BAD_REQUEST,
            ApiError::Conflict(_) | ApiError::NotRunning(_) => StatusCode::CONFLICT,
            ApiError::QueueFull(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": { "code": self.code(), "message": self.to_string() } })
    }

    /// A request body that is not the JSON the route takes.
    pub fn bad_json(e: &serde_json::Error) -> ApiError {
        ApiError::Invalid(format!(
            "the request body is not valid for this route: {e}; see GET /openapi.json"
        ))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), axum::Json(self.body())).into_response()
    }
}

impl From<ManagerError> for ApiError {
    fn from(e: ManagerError) -> ApiError {
        let msg = e.to_string();
        match e {
            ManagerError::NotFound(_) => ApiError::NotFound(msg),
            ManagerError::NotRunning { .. } => ApiError::NotRunning(msg),
            ManagerError::AlreadyExists(_) => ApiError::Conflict(msg),
            ManagerError::QueueFull { .. } => ApiError::QueueFull(msg),
            ManagerError::InvalidTimeout { .. } => ApiError::Invalid(msg),
            ManagerError::ShuttingDown => ApiError::Conflict(msg),
            ManagerError::InvalidConfig(_) => ApiError::Internal(msg),
            ManagerError::AlreadyPaused(_) | ManagerError::NotPaused { .. } => {
                ApiError::Conflict(msg)
            }
            ManagerError::PauseFailed { .. } | ManagerError::ResumeFailed { .. } => {
                ApiError::Conflict(msg)
            }
            ManagerError::PausedNoAutoResume(_) => ApiError::NotRunning(msg),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let msg = e.to_string();
        match e {
            StoreError::NotFound { .. } => ApiError::NotFound(msg),
            StoreError::TooLong { .. }
            | StoreError::Empty { .. }
            | StoreError::TooManyMetadata { .. } => ApiError::Invalid(msg),
            StoreError::DuplicateId { .. } | StoreError::AlreadyEnded { .. } => {
                ApiError::Conflict(msg)
            }
            _ => ApiError::Internal(msg),
        }
    }
}

impl From<SandboxError> for ApiError {
    fn from(e: SandboxError) -> ApiError {
        match e {
            SandboxError::Agent(AgentError::Refused { code, message }) => match code.as_str() {
                "notfound" => ApiError::NotFound(message),
                "permissiondenied" => ApiError::Forbidden(message),
                "exists" | "busy" => ApiError::Conflict(message),
                _ => ApiError::Invalid(message),
            },
            SandboxError::Agent(AgentError::Closed) => {
                ApiError::NotRunning(AgentError::Closed.to_string())
            }
            SandboxError::Backend(e) => e.into(),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<BackendError> for ApiError {
    /// A backend's refusal of what was asked (a backend this server cannot run, a capability
    /// the box lacks) is the client's to fix or to know about: 4xx. What failed on the host is
    /// the server's: 500.
    fn from(e: BackendError) -> ApiError {
        let msg = e.to_string();
        match e {
            BackendError::NotBuilt(_)
            | BackendError::Unavailable { .. }
            | BackendError::Invalid(_) => ApiError::Invalid(msg),
            BackendError::Unsupported { .. } | BackendError::NotPending(_) => {
                ApiError::Conflict(msg)
            }
            BackendError::Ended(_) => ApiError::NotRunning(msg),
            BackendError::Start(_) | BackendError::Run(_) | BackendError::Host(_) => {
                ApiError::Internal(msg)
            }
        }
    }
}

impl ApiError {
    /// What the native API answers when the box refuses an operation on a well-formed request:
    /// as [`From<SandboxError>`], except that refusals about the box's own state (a path that
    /// is a directory or not one, a tree too large to list, another I/O failure) are
    /// `conflict` (409), not `invalid`: the request passed every rule of the API, the sandbox's
    /// contents refused it. (E2B keeps its own mapping.)
    pub fn from_box(e: SandboxError) -> ApiError {
        match e {
            SandboxError::Agent(AgentError::Refused { code, message })
                if matches!(code.as_str(), "invalid" | "limit" | "io") =>
            {
                ApiError::Conflict(message)
            }
            other => other.into(),
        }
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("the E2B secrets cannot be used: {0}")]
    Secrets(String),
    #[error("--e2b-map-host {entry:?}: {why}")]
    MapHost { entry: String, why: String },
    #[error("the snapshots directory cannot be used: {0}")]
    Snapshots(String),
    #[error("cannot use the template store: {0}")]
    Templates(String),
    #[error("cannot open the store")]
    Store(#[from] StoreError),
    #[error("cannot get random bytes from the kernel (getrandom) for the API key or tokens")]
    Random(#[source] std::io::Error),
    #[error("cannot listen on {addr}; check that the address is free and valid")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the session manager cannot start: {0}")]
    Manager(#[from] ManagerError),
    #[error("cannot find airlock's own executable (needed to start sandbox hosts)")]
    CurrentExe(#[source] std::io::Error),
    #[error("--backend: {0}")]
    Backend(String),
    #[error(
        "the open-file limit (ulimit -n) is {limit}: airlock serve keeps {reserve} descriptors \
         for boxes (more with a higher --max-running) and files, and needs room for at least \
         {min} connections beside them; raise the limit (ulimit -n, or LimitNOFILE= in a \
         systemd unit) or lower --max-running"
    )]
    TooFewDescriptors { limit: u64, reserve: u64, min: u64 },
    #[error("the pools cannot be made: {0}")]
    Pools(#[from] crate::pools::PoolError),
    #[error("the HTTP server failed")]
    Io(#[from] std::io::Error),
}
