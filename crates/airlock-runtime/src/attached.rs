//! One command in a fresh box, attached to the caller's terminal or stdio (`airlock run`): what
//! every backend offers through [`Backend::run_attached`](crate::backend::Backend::run_attached).
//!
//! The generic way ([`run_over_agent`]) needs nothing but the seam: start a box, run the command
//! through its agent (on a pseudo-terminal of the box's when the caller's stdin is a terminal),
//! relay stdin, stdout, stderr, forwarded signals and window sizes, hold the deadline and the
//! output cap, then end the box. A backend with a faster one-shot path of its own (the native
//! box supervises its command directly) overrides the trait method.

mod over_agent;
mod signals;
pub mod tty;

pub use over_agent::{run_over_agent, run_over_agent_with, Stdio};
pub use signals::SignalGuard;

/// What the box's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StdinMode {
    /// A pseudo-terminal when airlock's stdin is a terminal, else airlock's stdin itself.
    #[default]
    Auto,
    /// /dev/null.
    Null,
}

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub stdin: StdinMode,
    /// A JSON-lines file that receives every network decision as it happens (proxied boxes).
    pub audit: Option<std::path::PathBuf>,
    /// A descriptor to read control messages from while the box runs (native boxes only so far).
    pub control_fd: Option<libc::c_int>,
    /// Ask about held connections on airlock's controlling terminal when the policy asks
    /// (approval `on-request`) and names no approver program (native boxes only so far).
    pub ask_on_terminal: Option<TerminalAsk>,
}

/// Asking on airlock's controlling terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalAsk {
    /// Where an "allow and save" answer writes its grant (the `--policy` file); `None`: that
    /// answer is refused with a line saying why.
    pub policy_file: Option<std::path::PathBuf>,
}
