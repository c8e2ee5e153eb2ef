//! airlock's HTTP server: sandboxes as a service. A native REST API (JSON; command output
//! streamed as NDJSON; files streamed both ways) over one [`SessionManager`] whose boxes are
//! [`LiveSandbox`]es (started through the backend seam), with every sandbox, state change, exec
//! and file write recorded in the store. Every request needs the API key or, for one sandbox,
//! that sandbox's token.
//!
//! [`SessionManager`]: airlock_sessions::SessionManager
//! [`LiveSandbox`]: airlock_runtime::LiveSandbox

mod accept;
mod admission;
mod approvals;
mod auth;
mod checks;
mod connection;
mod denials;
mod e2b;
mod error;
mod factory;
#[cfg(test)]
mod fake_tests;
mod held_secrets;
mod limits;
mod mcp;
mod network_audit;
mod observer;
mod pools;
mod requests;
mod routes;
mod secrets;
mod server;
mod service;
mod state;
mod template;
mod template_catalog;
mod transfer;
pub mod untrusted;
mod view;

pub use e2b::ingress::check_domain as check_e2b_domain;
pub use error::{ApiError, ServerError};
pub use limits::ConnectionLimits;
pub use pools::budget::DEFAULT_BUDGET as DEFAULT_POOL_MEMORY;
pub use pools::{PoolSpec, PoolSpecError};
pub use routes::ROUTES;
pub use server::{serve, E2bDefaultNetwork, ServerConfig, DEFAULT_TEMPLATE_UPLOAD_MAX};
