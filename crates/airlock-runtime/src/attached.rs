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

use crate::backend::{ApprovalAnswerer, ApprovalSink};
use std::sync::Arc;

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
#[derive(Clone, Default)]
pub struct RunOptions {
    pub stdin: StdinMode,
    /// A JSON-lines file that receives every network decision as it happens (proxied boxes).
    pub audit: Option<std::path::PathBuf>,
    /// A descriptor to read control messages from while the box runs (native boxes only so far).
    pub control_fd: Option<libc::c_int>,
    /// Ask about held connections on airlock's controlling terminal when the policy asks
    /// (approval `on-request`) and names no approver program: the native box asks there itself, the others through [`RunOptions::asker`].
    pub ask_on_terminal: Option<TerminalAsk>,
    /// Who answers the box's held connections on airlock's side of the seam, for backends
    /// whose proxy is not airlock's own (gVisor's host process, the microVM's): the box's
    /// requests go to it and its answers go back to the box. The native box asks itself
    /// ([`RunOptions::ask_on_terminal`]).
    pub asker: Option<Arc<dyn AttachedAsker>>,
    /// Native boxes only (a template build's box): make the box's root and start the command
    /// with its user namespace open at this descriptor (≥ 3), for steps that join it as root.
    pub root_at: Option<libc::c_int>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("stdin", &self.stdin)
            .field("audit", &self.audit)
            .field("control_fd", &self.control_fd)
            .field("ask_on_terminal", &self.ask_on_terminal)
            .field("asker", &self.asker.as_ref().map(|_| "…"))
            .field("root_at", &self.root_at)
            .finish()
    }
}

/// Asks airlock's user about an attached box's held connections, on airlock's side of the
/// seam (the terminal approver): the box's requests arrive as an [`ApprovalSink`], and each
/// answer goes straight back through the box's [`ApprovalAnswerer`], the moment it is given.
/// Asking takes the terminal: while a question is up the relay neither reads airlock's stdin
/// nor writes the box's output.
pub trait AttachedAsker: ApprovalSink {
    /// The box that asks answers through `answerer` (`None`: it cannot be answered; its
    /// questions are refused at their deadline).
    fn attach(&self, answerer: Option<Arc<dyn ApprovalAnswerer>>);
    /// Whether a question holds the terminal now.
    fn asking(&self) -> bool;
    /// Runs `relay` unless a question holds the terminal (`false` then: try again later);
    /// no question starts while it runs.
    fn relay_turn(&self, relay: &mut dyn FnMut()) -> bool;
    /// Stops asking: a question that is up is refused and taken down, and later ones too.
    fn close(&self);
}

/// Asking on airlock's controlling terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalAsk {
    /// Where an "allow and save" answer writes its grant (the `--policy` file); `None`: that
    /// answer is refused with a line saying why.
    pub policy_file: Option<std::path::PathBuf>,
}
