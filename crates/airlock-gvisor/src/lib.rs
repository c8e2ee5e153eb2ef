//! The gVisor backend: a box under `runsc`, gVisor's user-space kernel (the Sentry answers the
//! box's system calls; the host kernel sees only the Sentry's narrow, filtered set), built from
//! the same [`ResolvedPolicy`] as a native box and served by the same agent.
//!
//! Each box is held by its own host process (`airlock gvisor-host`, [`gvisor_host_main`]),
//! started from the native crate's permanent starter threads and speaking the same control
//! protocol as `airlock sandbox-host`, so the owner's side ([`airlock_native::start_hosted`])
//! is shared. The host process makes a private mount namespace whose tmpfs holds the OCI
//! bundle and runsc's state (gone with the last process in it), a host cgroup around runsc and
//! everything it starts, and for `--net proxy` a network namespace with nothing but loopback
//! and the egress proxy's listener.
//!
//! [`ResolvedPolicy`]: airlock_policy::ResolvedPolicy

mod agent_files;
mod backend;
mod box_start;
mod bundle;
mod checkpoint;
pub mod compat;
mod host;
mod layout;
mod netns;
mod protect;
mod receipt;
mod relay;
mod runsc;
mod spec;

pub use backend::{GvisorBackend, GvisorConfig};
pub use host::gvisor_host_main;
pub use runsc::{Platform, Runsc, RunscError, RunscNetwork};
