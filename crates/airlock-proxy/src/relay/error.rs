//! Why a tunnel's relay stopped before both sides were done.

use std::io;

/// A relay that ended early. [`RelayError::reason`] is the token recorded in the tunnel's event.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RelayError {
    /// Reading from one side failed (reset, timeout); the tunnel is closed.
    #[error("reading from one side of the tunnel failed")]
    Read(#[source] io::Error),
    /// Writing to one side failed (reset, closed); the tunnel is closed.
    #[error("writing to one side of the tunnel failed")]
    Write(#[source] io::Error),
    /// The box's byte budget is used up and more bytes arrived; the tunnel is closed.
    #[error("the box's byte budget is exhausted")]
    BudgetExhausted,
}

impl RelayError {
    /// The event's `reason`: `byte-budget-exhausted`, or `read failed: …` / `write failed: …`
    /// with the system's description.
    pub(crate) fn reason(&self) -> String {
        match self {
            RelayError::Read(e) => format!("read failed: {e}"),
            RelayError::Write(e) => format!("write failed: {e}"),
            RelayError::BudgetExhausted => "byte-budget-exhausted".into(),
        }
    }
}
