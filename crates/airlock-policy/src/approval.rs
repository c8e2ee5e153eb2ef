//! Approval policies: whether a connection the allowlist does not grant is refused at once
//! (`never`) or held while someone is asked (`on-request`; `untrusted` also asks before each
//! command run through the MCP tools). The proxy enforces it; this is the data.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How long a held connection waits for an answer when the policy does not say.
pub const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 30_000;

/// When airlock asks before refusing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// A refusal is final (the behaviour without approvals).
    #[default]
    Never,
    /// A connection the policy does not allow is held while the approver is asked.
    OnRequest,
    /// As `on-request`, and every command run through the MCP tools is asked about first.
    Untrusted,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Never => "never",
            ApprovalMode::OnRequest => "on-request",
            ApprovalMode::Untrusted => "untrusted",
        }
    }

    /// Whether refused connections are held and asked about.
    pub fn asks_for_network(self) -> bool {
        self != ApprovalMode::Never
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "never" => Ok(ApprovalMode::Never),
            "on-request" => Ok(ApprovalMode::OnRequest),
            "untrusted" => Ok(ApprovalMode::Untrusted),
            other => Err(format!(
                "unknown approval policy {other:?}: use never, on-request or untrusted"
            )),
        }
    }
}

/// Who is asked, and for how long, about a proxied box's refused connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    pub mode: ApprovalMode,
    /// A program on the host (run with `sh -c`) that gets each request as one JSON line on
    /// its stdin and answers with one JSON line on its stdout. `None`: whoever runs the box
    /// asks (the terminal, the server's API).
    #[serde(default)]
    pub approver: Option<String>,
    /// How long a held connection waits for an answer before it is refused.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_APPROVAL_TIMEOUT_MS
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy {
            mode: ApprovalMode::Never,
            approver: None,
            timeout_ms: DEFAULT_APPROVAL_TIMEOUT_MS,
        }
    }
}

/// How long a yes lasts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalScope {
    /// This connection only (and those held for the same destination at the same time).
    #[default]
    Once,
    /// New connections to the grant too, until its time limit or the box's end.
    Run,
    /// As `run`, and the grant is written to the policy file (by the approver that offers it).
    Save,
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
    pub scope: Option<ApprovalScope>,
    /// When the grant ends (milliseconds since the Unix epoch); `None` with a `run` or `save`
    /// scope: when the box ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_budget: Option<u64>,
}
