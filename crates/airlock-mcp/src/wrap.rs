//! `airlock wrap`: another MCP server, run inside a box, behind a JSON-RPC relay that filters
//! `tools/list`, refuses calls to filtered tools without reaching the server, reports the
//! server's end to the client, and audits every call. It forwards only what it checked:
//! each message re-serialised from the object it read, and a message with duplicate or
//! case-variant keys (which other parsers read differently) is refused.

mod audit;
mod gate;
mod relay;
mod strict;

pub use audit::{ApprovalRecord, AuditSink, CallRecord, InvalidRecord, Record};
pub use gate::{FromClient, Gate};
pub use relay::{relay, RelayError, WrappedServer};
