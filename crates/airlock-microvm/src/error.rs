//! Why a microVM box could not be made or used.

use std::path::PathBuf;

/// Errors of the microVM backend. Messages are sentences; user-fixable ones say how.
#[derive(Debug, thiserror::Error)]
pub enum MicrovmError {
    #[error("{what} is missing under {dir}: run scripts/microvm-guest.sh (it fetches Debian's kernel package and builds the static guest init and agent), or set AIRLOCK_MICROVM_DIR")]
    GuestMissing { what: String, dir: PathBuf },
    #[error("QEMU is not installed ({0}): install Debian's qemu-system-x86 package")]
    NoQemu(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("QEMU cannot be started in its jail (a user namespace of its own where it has no host privilege, and a mount namespace holding the shares' protected paths read-only): {0}. The microvm backend needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and no AppArmor rule denying them)")]
    Jail(#[source] std::io::Error),
    #[error("the VM did not come up: {0}")]
    Boot(String),
    #[error("QEMU's monitor refused {command}: {message}")]
    Qmp { command: String, message: String },
    #[error("the guest could not build the box: {0}")]
    Guest(String),
    #[error("{0}")]
    Invalid(String),
}

impl MicrovmError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> MicrovmError {
        MicrovmError::Io {
            what: what.into(),
            source,
        }
    }
}

impl From<MicrovmError> for airlock_runtime::backend::BackendError {
    fn from(e: MicrovmError) -> Self {
        use airlock_runtime::backend::BackendError;
        match e {
            MicrovmError::Invalid(m) => BackendError::Invalid(m),
            MicrovmError::GuestMissing { .. } | MicrovmError::NoQemu(_) => {
                BackendError::Unavailable {
                    kind: airlock_policy::BackendKind::Microvm,
                    why: e.to_string(),
                }
            }
            other => BackendError::Start(other.to_string()),
        }
    }
}
