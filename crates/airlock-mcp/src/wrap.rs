//! `airlock wrap`: another MCP server, run inside a box, behind a JSON-RPC relay that filters
//! `tools/list`, refuses calls to filtered tools without reaching the server, reports the
//! server's end to the client, and audits every call.

mod audit;
mod gate;
mod relay;

pub use audit::{AuditSink, CallRecord};
pub use gate::{FromClient, Gate};
pub use relay::{relay, RelayError, WrappedServer};
