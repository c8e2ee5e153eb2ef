//! What a session is, as callers see it: its state, what was asked for, and its public record.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Where a session is in its life. `Queued`, `Starting`, `Running`, `Paused` and `Resuming` are
/// live; the other four are terminal and never change again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Waiting in the FIFO queue for a free slot (`queue_position` says where).
    Queued,
    /// Holds a slot; its box is being started.
    Starting,
    /// Its box is up and accepts operations.
    Running,
    /// Its box is paused (frozen in place, or its state saved and the box ended); it holds no
    /// slot and does not expire until resumed.
    Paused,
    /// A paused box waiting for a slot (`queue_position` says where) or being resumed.
    Resuming,
    /// Ended on request (a kill, or the server shutting down).
    Killed,
    /// Its box reached its timeout.
    Expired,
    /// Its box could not start, or it waited too long in the queue (`reason` says which).
    Failed,
    /// Its box ended on its own.
    Dead,
}

impl SessionState {
    /// Whether the session has ended for good.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Killed
                | SessionState::Expired
                | SessionState::Failed
                | SessionState::Dead
        )
    }

    /// The state's name as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Queued => "queued",
            SessionState::Starting => "starting",
            SessionState::Running => "running",
            SessionState::Paused => "paused",
            SessionState::Resuming => "resuming",
            SessionState::Killed => "killed",
            SessionState::Expired => "expired",
            SessionState::Failed => "failed",
            SessionState::Dead => "dead",
        }
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a session asks for. The manager reads only `timeout_ms`; it hands the rest to the
/// [`BoxFactory`](super::BoxFactory) unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// The template the box is made from (`base`, `workspace`, ...).
    pub template: String,
    /// Labels to list and filter sessions by.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// The box's life in milliseconds once it starts; the manager's default when absent.
    #[serde(default)]
    pub timeout_ms: Option<i64>,
    /// Everything else the factory needs (the policy, ...); opaque to the manager.
    #[serde(default)]
    pub payload: serde_json::Value,
    /// A snapshot to start the box from instead of a fresh one (a fork); opaque to the manager.
    #[serde(default)]
    pub restore: Option<String>,
    /// What reaching the timeout does: end the box (the default) or pause it.
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Pause the box after this long without a request or a running command; the manager's
    /// default (`ManagerConfig::idle_pause_ms`) when absent, never when 0.
    #[serde(default)]
    pub idle_pause_ms: Option<i64>,
    /// Whether an operation on the paused box resumes it first (else it is refused).
    #[serde(default = "yes")]
    pub auto_resume: bool,
}

fn yes() -> bool {
    true
}

impl SessionSpec {
    /// A spec with the defaults for everything but the template and the factory's payload.
    pub fn new(template: String, payload: serde_json::Value) -> SessionSpec {
        SessionSpec {
            template,
            metadata: BTreeMap::new(),
            timeout_ms: None,
            payload,
            restore: None,
            on_timeout: OnTimeout::Kill,
            idle_pause_ms: None,
            auto_resume: true,
        }
    }
}

/// What happens to a running box when its timeout is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// It is stopped and the session ends `Expired`.
    #[default]
    Kill,
    /// It is paused with its memory (where its backend can), and resumes on the next request.
    Pause,
}

/// How a box was paused, as the factory reports it.
#[derive(Debug)]
pub enum Paused<H> {
    /// Frozen in place: the handle is kept (its memory stays resident), resumed by the factory.
    Resident(H),
    /// Its state was saved and the box ended: a resume starts it again from what was saved.
    Saved,
}

/// A session's public record at one moment. Times are milliseconds on the manager's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    pub template: String,
    pub metadata: BTreeMap<String, String>,
    pub state: SessionState,
    /// Why the session ended (terminal states), e.g. "timeout of 300 s reached".
    pub reason: Option<String>,
    pub created_ms: i64,
    /// When the box began to start (the session left the queue).
    pub started_ms: Option<i64>,
    /// When a queued session fails for want of a slot; once started, when its box expires.
    pub deadline_ms: i64,
    /// When the session reached its terminal state.
    pub ended_ms: Option<i64>,
    /// Place in the queue while `Queued`: 1 starts next.
    pub queue_position: Option<usize>,
}

/// Limits of a [`SessionManager`](super::SessionManager).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerConfig {
    /// Boxes that may hold a slot (starting, running or being stopped) at once; at least 1.
    pub max_running: usize,
    /// A box's life when its spec gives none (300 s).
    pub default_timeout_ms: i64,
    /// The longest life a create or a `set_timeout` may ask for.
    pub max_timeout_ms: i64,
    /// How long a session may wait in the queue before it fails.
    pub queue_timeout_ms: i64,
    /// Sessions that may wait in the queue at once; creates beyond it are refused.
    pub max_queued: usize,
    /// Ended sessions kept in memory for `get` and `list` (the oldest are forgotten first).
    pub keep_ended: usize,
    /// Pause boxes idle this long (no request, no running command), unless their spec says
    /// otherwise; `None`: never.
    pub idle_pause_ms: Option<i64>,
}

impl Default for ManagerConfig {
    fn default() -> ManagerConfig {
        ManagerConfig {
            max_running: 16,
            default_timeout_ms: 300_000,
            max_timeout_ms: 24 * 3600 * 1000,
            queue_timeout_ms: 120_000,
            max_queued: 1024,
            keep_ended: 10_000,
            idle_pause_ms: None,
        }
    }
}

impl ManagerConfig {
    /// Why this configuration cannot work, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.max_running == 0 {
            return Some("max_running is 0, so no box could ever run; give at least 1".into());
        }
        if self.max_timeout_ms <= 0 {
            return Some("max_timeout_ms must be positive".into());
        }
        if self.default_timeout_ms <= 0 || self.default_timeout_ms > self.max_timeout_ms {
            return Some(format!(
                "default_timeout_ms {} must be between 1 and max_timeout_ms ({})",
                self.default_timeout_ms, self.max_timeout_ms
            ));
        }
        if self.queue_timeout_ms <= 0 {
            return Some("queue_timeout_ms must be positive".into());
        }
        if self.idle_pause_ms.is_some_and(|ms| ms <= 0) {
            return Some(
                "idle_pause_ms must be positive (or absent: never pause idle boxes)".into(),
            );
        }
        None
    }
}
