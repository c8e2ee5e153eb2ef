//! One decision per connection request: the host is parsed and normalised, checked against the
//! deny list and the allow list, resolved on the host (or through `--map-host`), and every
//! resolved address is checked against the special-purpose ranges and the host's own addresses.
//! An allowed decision carries the exact addresses to connect to, so nothing is re-resolved
//! between the check and the connection (no DNS rebinding window).

mod decide;
mod offload;
mod outcome;
mod resolver;

pub use decide::decide;
pub(crate) use offload::decide_off_loop;
pub use outcome::{DenyReason, EgressDecision};
pub use resolver::{Resolver, SystemResolver};
