//! What an approver is asked, and how each approval step appears in the audit log.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// One held connection, as an approver sees it. Its JSON form is the line the approver
/// program reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Unique within the box; the answer names it.
    pub id: u64,
    /// `connect`, `http` or `socks5`.
    pub protocol: String,
    /// The normalised name or canonical IP address the box asked for.
    pub host: String,
    pub port: u16,
    /// The checked addresses a yes connects to (resolved on the host, never re-resolved).
    pub addrs: Vec<SocketAddr>,
    /// Why the rules refused it (kebab-case, as in the audit log).
    pub reason: String,
    /// The rule that refused or limited it, if one did.
    pub rule: Option<String>,
    /// The refusal the box gets if nobody says yes.
    pub message: String,
    /// The narrowest grant that allows it (`NAME:PORT` or `IP[:PORT]`); an answer may name it
    /// or a wider one that still contains the request.
    pub grant: String,
    /// Milliseconds since the Unix epoch when the connection was held.
    pub time_ms: u128,
    /// Milliseconds since the Unix epoch when it is refused if nobody answered.
    pub deadline_ms: u128,
}
