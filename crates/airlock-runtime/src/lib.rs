//! airlock's runtime: plans a box from a resolved policy, says what will be enforced (the
//! [`Receipt`]), runs one command in it and supervises it to the end (limits, timeout, output,
//! signals, cleanup), producing a [`RunResult`].

mod agent_client;
pub mod backend;
mod changes;
mod control;
mod host;
mod hosted_box;
mod idmapping;
mod interpreter;
mod launch;
mod live_sandbox;
mod mux;
mod native_backend;
mod output_file;
mod placeholders;
mod plan;
mod proxy_channel;
mod receipt;
mod result;
mod sandbox;
mod sandbox_host;
mod sentinel;
mod session;
mod session_process;
mod signals;
mod starter_pool;
mod stdio;
mod supervisor;
#[cfg(test)]
mod test_dir;
mod tty;

pub use agent_client::{AgentClient, AgentError};
pub use airlock_protocol::{Entry, EntryKind, ExecReply, FsEventKind, ProcessInfo, TtySize};
pub use changes::{ChangeIssue, ChangesReport};
pub use control::{ControlMessage, ControlReader};
pub use host::RealHost;
pub use interpreter::{CodeContext, CodeEnd, CodeEvent, Language};
pub use live_sandbox::LiveSandbox;
pub use mux::{AgentMux, MuxPort};
pub use native_backend::{probe_policy, NativeBackend};
pub use output_file::{box_writable_roots, open_output, OutputFileError, OutputMode};
pub use plan::{BoxPlan, PlanError};
pub use receipt::{HostReport, Layer, LayerStatus, Receipt};
pub use result::{Event, LimitHit, RunResult};
pub use sandbox::{Sandbox, SandboxError, SandboxOptions};
pub use sandbox_host::sandbox_host_main;
pub use session::{AgentSession, Command, ExecOutput, ExitInfo, Stream};
pub use session_process::{FsChange, ProcessOutput, ProcessSpec};
pub use supervisor::{run, RunError, RunOptions, StdinMode};
