//! The relay of an allowed connection: bytes both ways between the box's socket and the
//! upstream one, half-close aware, counted per direction and against the box's byte budget.
//!
//! Small and interactive traffic is copied through a small buffer. A direction that moves bulk
//! data switches to `splice(2)` through a kernel pipe (socket → pipe → socket, no copy through
//! user space), which is what lets a tunnel keep up with a direct connection when the sender
//! and the receiver already use every core; it falls back to copying where splice is refused.
//!
//! - `duplex`: both directions of one tunnel; `pump`: one direction (also a bounded number of
//!   bytes, for one HTTP message body).
//! - `pipe`: the pipes and their process-wide bound; `sys`: the system calls.
//! - `meter`: byte counts and the budget; `error`: why a relay ended early.
//! - `loopback`: no pacing on loopback connections (the box's side always is one).

mod duplex;
mod error;
mod loopback;
mod meter;
mod pipe;
mod pump;
mod sys;

pub(crate) use duplex::relay;
pub(crate) use error::RelayError;
pub(crate) use loopback::unpace_if_loopback;
pub(crate) use meter::Meter;
pub(crate) use pump::{half_close, pump_exact, read_metered, write_all};
