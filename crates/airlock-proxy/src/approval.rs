//! Approvals: a connection the rules do not allow is held, not refused, while an approver (a
//! person at a terminal or through the API, or a program) is asked; a yes becomes a narrow,
//! temporary grant that lives in the proxy and ends with the box.
//!
//! - `askable`: which refusals may be asked about at all (deny rules and non-public addresses
//!   never are) and the narrowest grant that would allow one.
//! - `request`, `answer`: what an approver is asked and what it answers (the JSON lines of the
//!   approver program).
//! - `pending`: the requests waiting for an answer; `grants`: the grants answers made.
//! - `approver`: who is asked; `program`: the approver program (`--approver CMD`); `terminal`:
//!   airlock's controlling terminal.
//! - `gate`: the proxy's side: hold, ask, wait until the deadline, record every step.

mod answer;
mod approver;
mod askable;
mod error;
mod gate;
mod grants;
mod pending;
mod program;
mod request;
pub mod terminal;

pub use airlock_policy::{ApprovalNote, ApprovalScope, ApprovalStage};
pub use answer::{Answer, AnswerLine, Verdict};
pub use approver::Approver;
pub use askable::{askable, GrantTarget};
pub use error::ApprovalError;
pub(crate) use gate::Held;
pub use gate::{check_approver, gate_for, ApprovalGate, Asker};
pub use grants::{Grant, Grants};
pub use pending::{answer_from_owner, PendingQueue};
pub use program::ProgramApprover;
pub use request::ApprovalRequest;
pub(crate) use request::Peer;
pub use request::PeerNamer;
pub use terminal::{TerminalApprover, TerminalFloor};
