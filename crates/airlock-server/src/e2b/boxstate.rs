//! What the gateway keeps per box beyond the runtime's handle: the envd processes it started
//! and the polling watchers it holds. Lives in the box's handle, so it ends with the box.

use super::procs::Procs;
use super::watch::Watchers;

/// The gateway's state of one box.
#[derive(Default)]
pub(crate) struct E2bBox {
    pub procs: Procs,
    pub watchers: Watchers,
}
