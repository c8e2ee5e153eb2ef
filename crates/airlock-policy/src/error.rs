use std::path::PathBuf;

/// Why a policy could not be read or resolved. Every message says what was wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("policy file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "invalid size {value:?}: use a number of bytes with an optional unit, e.g. 512M, 2G, 1GiB"
    )]
    Size { value: String },
    #[error("invalid duration {value:?}: use a number with a unit, e.g. 500ms, 30s, 5m, 1h")]
    Duration { value: String },
    #[error("{what} must be {rule}; got {value}")]
    OutOfRange {
        what: &'static str,
        rule: &'static str,
        value: String,
    },
    #[error("{what} {path}: {reason}")]
    Path {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("invalid --env {value:?}: use NAME (pass the caller's value) or NAME=VALUE, where NAME is letters, digits and '_' and does not start with a digit")]
    EnvName { value: String },
    #[error("{0}")]
    Conflict(String),
    #[error("secret {name}: {reason}")]
    Secret { name: String, reason: String },
    #[error("{flag} needs --net proxy (the allowlist and its limits are enforced by airlock's egress proxy); add --net proxy")]
    NeedsProxy { flag: &'static str },
}
