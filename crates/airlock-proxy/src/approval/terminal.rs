//! The terminal approver: asks on airlock's controlling terminal (`/dev/tty` of the airlock
//! process), one question at a time. The box never has this terminal: it gets its own
//! pseudo-terminal or pipes, so it can neither read the question nor answer it.
//!
//! - `prompt`: the question's text and the keys it takes.
//! - `tty`: the terminal itself (opened, put in a mode for one key, waited on).
//! - `floor`: who writes to the terminal: while a question is up, the box's relayed output
//!   and airlock's relayed input pause, so the prompt and the box's screen never mix.
//! - `asking`: the approver and its one asking thread.

mod asking;
mod floor;
mod prompt;
mod tty;

pub use asking::TerminalApprover;
pub use floor::{RelayTurn, TerminalFloor};
