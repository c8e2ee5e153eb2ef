//! What an approver is asked, and how each approval step appears in the audit log.

use super::answer::Scope;
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

/// Which step of an approval an audit event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalStage {
    /// A connection was held and the approver asked.
    Requested,
    /// The approver said yes.
    Allowed,
    /// The approver said no (or answered something that could not be applied).
    Denied,
    /// Nobody answered before the deadline: refused.
    TimedOut,
    /// A grant's time or byte budget ran out: new connections are asked about again.
    Expired,
}

/// The approval part of an audit event (`decision: "ask"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalNote {
    pub id: u64,
    pub stage: ApprovalStage,
    /// Who answered (`program: CMD`, `terminal`, `api`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The grant asked for or made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// When the grant ends (milliseconds since the Unix epoch); `None` with a `run` or `save`
    /// scope: when the box ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_budget: Option<u64>,
}
