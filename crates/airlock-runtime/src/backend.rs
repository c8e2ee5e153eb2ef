//! The seam every kind of box sits behind. A [`Backend`] turns a resolved policy and a template
//! into a running box ([`BoxInstance`]); everything above this seam (the server, the E2B gateway,
//! MCP, the CLI's long-lived boxes) reaches a box only through it and through the agent protocol
//! spoken over the instance's agent stream — never through a pid, a cgroup path or a file under
//! a box's `/proc`.

mod approvals;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod instance;
mod network_event;
mod registry;
mod template;
mod usage;

pub use approvals::{ApprovalAnswerer, ApprovalSink};
pub use error::BackendError;
pub use instance::{
    Backend, BoxEnd, BoxInstance, Capabilities, Checkpoint, CheckpointKind, CheckpointOptions,
    CommandDefaults, NetworkSink, StartOptions,
};
pub use network_event::{NetDecision, NetProtocol, NetworkEvent};
pub use registry::{Availability, BackendReport, Backends};
pub use template::{ImageTemplate, Template, TemplateDefaults};
pub use usage::Usage;
