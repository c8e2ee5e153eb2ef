//! airlock's runtime: plans a box from a resolved policy, says what will be enforced (the
//! [`Receipt`]), runs one command in it and supervises it to the end (limits, timeout, output,
//! signals, cleanup), producing a [`RunResult`].

mod agent_client;
mod control;
mod host;
mod idmapping;
mod launch;
mod placeholders;
mod plan;
mod proxy_channel;
mod receipt;
mod result;
mod sandbox;
mod sentinel;
mod signals;
mod stdio;
mod supervisor;
mod tty;

pub use agent_client::AgentError;
pub use control::{ControlMessage, ControlReader};
pub use host::RealHost;
pub use plan::{BoxPlan, PlanError};
pub use receipt::{HostReport, Layer, LayerStatus, Receipt};
pub use result::{Event, LimitHit, RunResult};
pub use sandbox::{ExecOutput, Sandbox, SandboxError, SandboxOptions};
pub use supervisor::{run, RunError, RunOptions, StdinMode};
