//! What the gateway keeps per sandbox beyond the runtime's handle: the envd processes it started
//! and the polling watchers it holds. Kept by sandbox id in [`super::E2bState`] (the box's
//! handle knows nothing of E2B) and forgotten when the sandbox ends.

use super::metrics::History;
use super::procs::Procs;
use super::watch::Watchers;

/// The gateway's state of one box.
#[derive(Default)]
pub(crate) struct E2bBox {
    pub procs: Procs,
    pub watchers: Watchers,
    pub metrics: History,
    /// Who may reach the box's ports, as its E2B create request said (unset: not made by
    /// E2B's create, and the traffic token is required).
    pub ingress: std::sync::OnceLock<super::ingress::IngressRule>,
}
