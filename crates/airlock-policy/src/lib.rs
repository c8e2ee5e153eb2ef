//! airlock's policy model.
//!
//! A policy says what a box may touch: which host paths it sees and how, whether it has a network,
//! and how much memory, processes, CPU, disk, time and output it may use. It is pure data: this
//! crate parses and validates it and resolves it into a [`ResolvedPolicy`] that every backend
//! consumes, but never makes a syscall of its own (the few host facts resolution needs, such as
//! where a path really points, come in through [`HostView`]).
//!
//! Deny by default: an empty policy grants nothing beyond the system directories needed to run
//! programs, and every grant is an explicit entry.

mod approval;
mod approval_exchange;
mod backend;
mod changes;
mod denial;
mod error;
mod file;
mod profile;
mod protected;
mod resolve;
mod save;
mod secrets;
mod units;

pub use approval::{
    ApprovalMode, ApprovalNote, ApprovalPolicy, ApprovalScope, ApprovalStage,
    DEFAULT_APPROVAL_TIMEOUT_MS,
};
pub use approval_exchange::{ApprovalAnswer, ApprovalRequest, ApprovalVerdict};
pub use backend::BackendKind;
pub use changes::ChangesMode;
pub use denial::{Denial, DenialKind};
pub use error::PolicyError;
pub use file::{EnvSection, FilesystemSection, LimitsSection, NetworkSection, PolicyFile};
pub use profile::{NetworkMode, Profile};
pub use protected::{ProtectedKind, ProtectedPath, PROTECTED_PATHS};
pub use resolve::{
    add_grant, grant_mount, redirected_grants, resolve, Access, Egress, FilesystemPolicy, HostView,
    Limits, Mount, ResolveContext, ResolvedPolicy, RootTemplate, DEFAULT_PATH, INSIDE_GID,
    INSIDE_HOME, INSIDE_UID, INSIDE_USER,
};
pub use save::{save_grant, with_grant, GrantList, SaveGrantError};
pub use secrets::{
    new_placeholder, with_port, HeaderSet, SecretBinding, SecretEntry, SecretSource, SecretValue,
    SecretValues, SECRET_DEFAULT_PORT,
};
pub use units::{parse_duration, parse_size, DurationValue, SizeValue};
