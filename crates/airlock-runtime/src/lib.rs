//! airlock's runtime, backend-neutral: the [`backend`] seam every box kind sits behind (plan →
//! [`Receipt`], start → a box instance), the [`LiveSandbox`] every server and MCP caller holds,
//! the agent client and its multiplexer (one connection, many concurrent [`AgentChannel`]s),
//! receipts and the result types of a run ([`RunResult`]).
//!
//! It must not depend on the jail or the egress proxy: the native box's host side lives in
//! `airlock-native`, behind the seam like any other backend.

mod agent_client;
pub mod attached;
pub mod backend;
mod channel;
mod channel_process;
mod denials;
mod error;
mod host;
mod interpreter;
mod live_sandbox;
mod mux;
mod receipt;
mod result;
pub mod tunnel;

pub use agent_client::{AgentClient, AgentError};
pub use airlock_protocol::{
    Entry, EntryKind, ExecReply, ExecUser, FsEventKind, ProcessInfo, TtySize,
};
pub use channel::{AgentChannel, Command, ExecOutput, ExitInfo, Stream};
pub use channel_process::{FsChange, ProcessOutput, ProcessSpec};
pub use error::SandboxError;
pub use host::RealHost;
pub use interpreter::{CodeContext, CodeEnd, CodeEvent, Language};
pub use live_sandbox::LiveSandbox;
pub use mux::{AgentMux, MuxPort, MuxSender};
pub use receipt::{HostReport, Layer, LayerStatus, Receipt, MEMORY_LAYER, ROOT_LAYER};
pub use result::{ChangeIssue, ChangesReport, Event, LimitHit, RunResult};
