//! One decision of a box's egress proxy, as a typed value that crosses the seam.

use serde::{Deserialize, Serialize};

/// How the box asked to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetProtocol {
    /// An absolute-URI HTTP request.
    Http,
    /// HTTP `CONNECT`.
    Connect,
    /// SOCKS5.
    Socks5,
    /// One request on an intercepted connection (a secret is bound to its host).
    Https,
}

/// What became of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetDecision {
    Allow,
    Deny,
    /// A step of an approval (the connection held, the answer, a grant's end); the
    /// connection's own event says what became of it.
    Ask,
}

/// One connection request of a box and what became of it. Serialised, it is the same JSON
/// object the proxy's audit file holds (the store's audit log and events keep that shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkEvent {
    /// Milliseconds since the Unix epoch when the request arrived.
    pub time_ms: u64,
    pub protocol: NetProtocol,
    pub host: String,
    pub port: u16,
    /// The address actually connected to (allowed requests).
    pub addr: Option<String>,
    pub decision: NetDecision,
    /// Why it was denied (kebab-case), or why an allowed connection failed.
    pub reason: Option<String>,
    /// The rule that decided, as the user wrote it.
    pub rule: Option<String>,
    /// The one-line message the box was given on denial.
    pub message: Option<String>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// How long the connection lasted, in milliseconds.
    pub duration_ms: f64,
    /// Whether the proxy terminated the box's TLS to add a secret.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intercepted: bool,
    /// The secrets whose values went into this request (names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The approval step an `ask` event records (the request, the answer and who gave it, the
    /// grant and when it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<airlock_policy::ApprovalNote>,
    /// A refusal as a structured value: what, the rule, the grant that would allow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denial: Option<airlock_policy::Denial>,
}
