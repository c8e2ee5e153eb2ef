//! airlock's runtime, backend-neutral: the [`backend`] seam every box kind sits behind (plan →
//! [`Receipt`], start → a box instance), the [`LiveSandbox`] every server and MCP caller holds,
//! the agent client and its multiplexer (one connection, many concurrent [`AgentSession`]s),
//! receipts and the result types of a run ([`RunResult`]).
//!
//! It must not depend on the jail or the egress proxy: the native box's host side lives in
//! `airlock-native`, behind the seam like any other backend.

mod agent_client;
pub mod backend;
mod error;
mod host;
mod interpreter;
mod live_sandbox;
mod mux;
mod receipt;
mod result;
mod session;
mod session_process;

pub use agent_client::{AgentClient, AgentError};
pub use airlock_protocol::{Entry, EntryKind, ExecReply, FsEventKind, ProcessInfo, TtySize};
pub use error::SandboxError;
pub use host::RealHost;
pub use interpreter::{CodeContext, CodeEnd, CodeEvent, Language};
pub use live_sandbox::LiveSandbox;
pub use mux::{AgentMux, MuxPort};
pub use receipt::{HostReport, Layer, LayerStatus, Receipt};
pub use result::{ChangeIssue, ChangesReport, Event, LimitHit, RunResult};
pub use session::{AgentSession, Command, ExecOutput, ExitInfo, Stream};
pub use session_process::{FsChange, ProcessOutput, ProcessSpec};
