//! What an approver is asked and what it answers, as data: the same values cross the approver
//! program's pipes, a box's host-process control socket and the server's API.

use crate::ApprovalScope;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// One held connection, as an approver sees it. Its JSON form is the line the approver
/// program reads (and an entry of `GET /v1/sandboxes/{id}/approvals`).
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
    /// The box's processes that hold the connection, as the box names them (its command lines,
    /// control characters replaced, cut short; a box can call itself anything), with their pids
    /// inside the box; `None` where the backend cannot tell (gVisor's and a microVM's network
    /// stacks are not the host's).
    #[serde(default)]
    pub process: Option<String>,
}

/// Yes or no.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalVerdict {
    Allow,
    Deny,
}

/// An answer to one request as it crosses a process boundary (the request's id travels
/// beside it). The proxy checks it exactly as it checks the approver program's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub answer: ApprovalVerdict,
    /// Default `once`.
    #[serde(default)]
    pub scope: ApprovalScope,
    /// The grant's time to live (scope `run`); none: until the box ends.
    #[serde(default)]
    pub ttl_secs: Option<u64>,
    /// Bytes (both directions, all its connections) the grant may move.
    #[serde(default)]
    pub byte_budget: Option<u64>,
    /// The grant to make instead of the request's own (it must contain the request).
    #[serde(default)]
    pub grant: Option<String>,
}
