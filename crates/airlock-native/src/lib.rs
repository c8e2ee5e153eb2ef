//! The native box's host side: plans a box from a resolved policy (namespaces, mounts, seccomp,
//! Landlock, limits — and the [`Receipt`] saying what is enforced), launches it through the jail
//! (idmapped grants, cgroup, the egress proxy's door, placeholders, the cleanup sentinel), and
//! either supervises one command to the end ([`run`]: limits, timeout, output, signals, the
//! workspace's change layer) or holds a long-lived box whose init is the agent ([`Sandbox`],
//! served by `airlock sandbox-host`, reached through [`NativeBackend`] behind the runtime's seam).
//!
//! Depends on the runtime (the seam and the shared result types), the jail, the proxy, the
//! policy, the protocol and the agent. Nothing above the seam should need this crate except to
//! construct a [`NativeBackend`].
//!
//! [`Receipt`]: airlock_runtime::Receipt

mod ask_terminal;
pub use ask_terminal::OwnerTerminal;
pub mod box_host;
mod box_root;
mod box_secrets;
mod changes;
mod control;
mod host_loop;
pub mod host_zygote;
mod hosted_box;
mod idmapping;
mod launch;
mod native_backend;
mod output_file;
mod owner_approver;
mod peer_process;
mod placeholders;
mod plan;
mod proxy_channel;
mod sandbox;
mod sandbox_host;
mod sentinel;
mod sentinel_service;
mod spawned_host;
mod starter_pool;
mod stdio;
mod supervisor;
#[cfg(test)]
mod test_dir;

pub use airlock_runtime::attached::{RunOptions, StdinMode, TerminalAsk};
pub use box_secrets::{
    add_receipt as add_secrets_receipt, add_receipt_for as add_secrets_receipt_for, extend_trust,
    interceptor, protect_process, SecretsSetupError,
};
pub use control::{ControlMessage, ControlReader};
pub use host_loop::{host_main, HeldBox, StartRequest, StartedBox};
pub use hosted_box::HostProcess;
pub use native_backend::{probe_policy, NativeBackend};
pub use output_file::{box_writable_roots, open_output, OutputFileError, OutputMode};
pub use placeholders::{create as create_placeholders, remove as remove_placeholders, Placeholder};
pub use plan::{proxy_env, BoxPlan, PlanError, PROXY_PORT};
pub use sandbox::{Sandbox, SandboxOptions};
pub use sandbox_host::{network_event, sandbox_host_main, FromHost, ToHost, MAX_CONTROL};
pub use sentinel::Sentinel;
pub use sentinel_service::{sentinel_service_main, SERVICE_ARG as SENTINEL_SERVICE_ARG};
pub use starter_pool::start_hosted;
pub use supervisor::{run, RunError};
