//! The result document of one run (`--json`).

use crate::backend::NetworkEvent;
use crate::Receipt;
use serde::Serialize;

/// Which limit ended or constrained the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitHit {
    Timeout,
    Memory,
    Pids,
    Output,
    /// The proxied box's byte budget (`--byte-budget`) ran out.
    ByteBudget,
}

/// Something that happened during the run, with its time since start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub time_ms: f64,
    pub kind: &'static str,
    pub detail: String,
}

/// The outcome of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// airlock's own exit status for this run: the command's code, 128+N for signal N, 124 on
    /// timeout, 125 when airlock failed, 126/127 when the command could not be run.
    pub exit_code: i32,
    /// The command's own exit code, if it exited.
    pub command_exit_code: Option<i32>,
    /// The signal that killed the command, if any.
    pub signal: Option<i32>,
    pub limits_hit: Vec<LimitHit>,
    pub wall_ms: f64,
    pub cpu_user_ms: f64,
    pub cpu_system_ms: f64,
    pub peak_memory_bytes: Option<u64>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// Why airlock failed (exit 125) or the command could not start (126/127).
    pub error: Option<String>,
    pub receipt: Receipt,
    pub events: Vec<Event>,
    /// Every network decision of the egress proxy (proxied boxes).
    pub network_events: Vec<NetworkEvent>,
    /// Network events not kept in this document (the audit file has them all).
    pub network_events_dropped: u64,
    /// What applying the workspace's change layer did (`changes = "apply"` only).
    pub changes: Option<ChangesReport>,
    /// Every refusal of the run as a structured value (connections refused, protected paths
    /// not applied, limits reached), each with the grant or flag that would allow it; the
    /// fields above stay as they were. Filled by [`RunResult::collect_denials`].
    pub denials: Vec<airlock_policy::Denial>,
}

impl RunResult {
    /// Fills `denials` from the network events, the change layer's report and the limits hit.
    pub fn collect_denials(&mut self) {
        self.denials = crate::denials::of_run(self);
    }
}

/// One entry of the change layer that was not applied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeIssue {
    /// The path relative to the workspace.
    pub path: String,
    pub reason: String,
}

/// What applying a change layer did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChangesReport {
    /// Files, symlinks and directories created or replaced on the host.
    pub written: u64,
    /// Entries removed on the host (the box deleted them).
    pub deleted: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// Entries left out on purpose (protected paths, sockets, devices).
    pub skipped: Vec<ChangeIssue>,
    /// Entries that could not be applied (the host workspace keeps its old state there).
    pub failed: Vec<ChangeIssue>,
}
