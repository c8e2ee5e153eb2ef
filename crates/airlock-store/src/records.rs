//! The records the store keeps: sandboxes, their events and audit entries.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a sandbox is in its life. The last four are terminal: once there, it never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// Waiting for a free slot under the cap on running boxes.
    Queued,
    /// Its box is being created.
    Starting,
    /// Its box is up.
    Running,
    /// Its box is paused: frozen in place, or its state saved in a snapshot.
    Paused,
    /// Its box is waiting for a slot to resume, or resuming.
    Resuming,
    /// Ended on request.
    Killed,
    /// Ended because its deadline passed.
    Expired,
    /// Ended because its supervisor disappeared (for example the server stopped while it ran).
    Dead,
    /// Never came up, or ended on an error.
    Failed,
}

impl SandboxState {
    /// Every state, in lifecycle order.
    pub const ALL: [SandboxState; 9] = [
        SandboxState::Queued,
        SandboxState::Starting,
        SandboxState::Running,
        SandboxState::Paused,
        SandboxState::Resuming,
        SandboxState::Killed,
        SandboxState::Expired,
        SandboxState::Dead,
        SandboxState::Failed,
    ];

    /// The states in which a box may still exist and needs a live supervisor.
    pub const LIVE: [SandboxState; 5] = [
        SandboxState::Queued,
        SandboxState::Starting,
        SandboxState::Running,
        SandboxState::Paused,
        SandboxState::Resuming,
    ];

    /// True for the states a sandbox never leaves: killed, expired, dead, failed.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SandboxState::Killed
                | SandboxState::Expired
                | SandboxState::Dead
                | SandboxState::Failed
        )
    }

    /// The state's name, as stored and as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxState::Queued => "queued",
            SandboxState::Starting => "starting",
            SandboxState::Running => "running",
            SandboxState::Paused => "paused",
            SandboxState::Resuming => "resuming",
            SandboxState::Killed => "killed",
            SandboxState::Expired => "expired",
            SandboxState::Dead => "dead",
            SandboxState::Failed => "failed",
        }
    }

    /// The state named `name` (as [`SandboxState::as_str`] spells it), if any.
    pub fn from_name(name: &str) -> Option<SandboxState> {
        SandboxState::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for SandboxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSandbox {
    /// Unique id (non-empty, at most 256 bytes).
    pub id: String,
    /// The template it was made from.
    pub template: String,
    /// Its resolved policy, as JSON (at most 1 MiB encoded).
    pub policy: serde_json::Value,
    /// Caller-chosen labels (at most 64 pairs; keys 1..=128 bytes, values at most 1024 bytes).
    pub metadata: BTreeMap<String, String>,
    /// Hash of its access token.
    pub token_hash: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When it expires, milliseconds since the Unix epoch.
    pub deadline_ms: i64,
    /// Its first state.
    pub state: SandboxState,
}

/// A sandbox as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxRecord {
    /// Unique id.
    pub id: String,
    /// The template it was made from.
    pub template: String,
    /// Its resolved policy.
    pub policy: serde_json::Value,
    /// Caller-chosen labels.
    pub metadata: BTreeMap<String, String>,
    /// Hash of its access token; never serialized, so a record can be shown to clients.
    #[serde(skip_serializing)]
    pub token_hash: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When it expires, milliseconds since the Unix epoch.
    pub deadline_ms: i64,
    /// Its current state.
    pub state: SandboxState,
    /// Why it reached its current state, if said.
    pub reason: Option<String>,
    /// When it reached a terminal state, milliseconds since the Unix epoch.
    pub ended_ms: Option<i64>,
    /// The host process that supervises its box, if any.
    pub supervisor_pid: Option<i32>,
    /// The kernel boot during which that process ran.
    pub boot_id: Option<String>,
}

/// Which sandboxes [`Store::list_sandboxes`](super::Store::list_sandboxes) returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFilter {
    /// Only these states; empty means any state.
    pub states: Vec<SandboxState>,
    /// Only sandboxes carrying every one of these pairs.
    pub metadata: BTreeMap<String, String>,
    /// At most this many, newest first (capped at [`MAX_PAGE`](super::MAX_PAGE)).
    pub limit: u32,
}

impl Default for SandboxFilter {
    /// Any state, any metadata, up to 100 records.
    fn default() -> Self {
        SandboxFilter {
            states: Vec::new(),
            metadata: BTreeMap::new(),
            limit: 100,
        }
    }
}

/// One event in a sandbox's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRecord {
    /// Increasing id, unique across all sandboxes; page with `after_id`.
    pub id: i64,
    /// The sandbox it is about.
    pub sandbox_id: String,
    /// When it was recorded, milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// What happened (for example "state", "exec", "oom").
    pub kind: String,
    /// Details, as JSON.
    pub detail: serde_json::Value,
}

/// An audit entry to record: an exec, a file write, a network decision, ...
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// The sandbox concerned, if any.
    pub sandbox_id: Option<String>,
    /// What was done: "exec", "file_write", "file_read", "network", ...
    pub kind: String,
    /// Who did it (an API key name, "agent", "server", ...).
    pub actor: String,
    /// What exactly, as JSON (at most 64 KiB encoded).
    pub summary: serde_json::Value,
    /// When, milliseconds since the Unix epoch.
    pub time_ms: i64,
}

/// An audit entry as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    /// Increasing id; page with `after_id`.
    pub id: i64,
    /// The entry.
    #[serde(flatten)]
    pub entry: AuditEntry,
}
