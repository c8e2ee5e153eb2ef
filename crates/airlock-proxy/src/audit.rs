//! Decision events: one per connection request, readable by the caller (the `--json` result) and
//! optionally appended to a JSON-lines audit file as they happen.

use serde::Serialize;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Told about every event as it is recorded (from the proxy's thread).
pub type EventSink = Arc<dyn Fn(&NetEvent) + Send + Sync>;

/// One connection request and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetEvent {
    /// Milliseconds since the Unix epoch when the request arrived.
    pub time_ms: u128,
    /// `http` (absolute-URI), `connect` (HTTP CONNECT), `socks5`, or `https` (one request on
    /// an intercepted connection).
    pub protocol: &'static str,
    pub host: String,
    pub port: u16,
    /// The address actually connected to (allowed requests).
    pub addr: Option<SocketAddr>,
    /// `allow` or `deny`; `ask` for a step of an approval (see `approval`).
    pub decision: &'static str,
    /// Why it was denied (kebab-case), or why an allowed connection failed.
    pub reason: Option<String>,
    /// The rule that decided, as the user wrote it.
    pub rule: Option<String>,
    /// The one-line message the box was given on denial.
    pub message: Option<String>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub duration_ms: f64,
    /// Whether the proxy terminated the box's TLS to add a secret (an `https` event is one
    /// request on such a connection).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub intercepted: bool,
    /// The secrets whose values were put in this request (names only, never values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The approval step an `ask` event records: the request, the answer and who gave it, the
    /// grant and when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<airlock_policy::ApprovalNote>,
    /// A refusal (`deny`) as a structured value: what, the rule, the grant that would allow
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denial: Option<airlock_policy::Denial>,
}

/// Where events go: kept in memory (bounded) and written to the audit file if one is set.
pub struct AuditLog {
    events: Mutex<Vec<NetEvent>>,
    dropped: Mutex<u64>,
    file: Mutex<Option<std::fs::File>>,
    sink: Option<EventSink>,
}

/// Events kept in memory for the result document; later ones are counted, not kept (the audit
/// file, if any, still gets every event).
const MAX_KEPT: usize = 10_000;

impl AuditLog {
    pub fn new(file: Option<std::fs::File>, sink: Option<EventSink>) -> AuditLog {
        AuditLog {
            events: Mutex::new(Vec::new()),
            dropped: Mutex::new(0),
            file: Mutex::new(file),
            sink,
        }
    }

    /// Records one event.
    pub fn record(&self, event: NetEvent) {
        if let Some(sink) = &self.sink {
            sink(&event);
        }
        if let Ok(mut f) = self.file.lock() {
            if let Some(file) = f.as_mut() {
                if let Ok(line) = serde_json::to_string(&event) {
                    let _ = writeln!(file, "{line}");
                }
            }
        }
        if let Ok(mut ev) = self.events.lock() {
            if ev.len() < MAX_KEPT {
                ev.push(event);
                return;
            }
        }
        if let Ok(mut d) = self.dropped.lock() {
            *d += 1;
        }
    }

    /// Every event kept so far, and how many were not kept.
    pub fn snapshot(&self) -> (Vec<NetEvent>, u64) {
        let events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        let dropped = self.dropped.lock().map(|d| *d).unwrap_or(0);
        (events, dropped)
    }
}
