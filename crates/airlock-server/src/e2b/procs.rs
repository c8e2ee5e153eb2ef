//! What envd's process service needs that the agent does not keep: per box, the E2B view of each
//! process it started (its config, tag and stdin channel), and the translation of what a process
//! does into envd's `ProcessEvent` JSON (proto3 JSON: lowerCamelCase, bytes as base64).

use super::error::E2bError;
use airlock_runtime::{AgentChannel, ExecReply, ExitInfo, ProcessOutput, SandboxError};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Processes remembered per box after they end (for `List` and late `Connect`s they are gone).
const MAX_PROCS: usize = 4096;

/// envd's `ProcessConfig`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProcessConfig {
    #[serde(default)]
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub envs: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
}

impl ProcessConfig {
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({"cmd": self.cmd, "args": self.args, "envs": self.envs});
        if let Some(cwd) = &self.cwd {
            v["cwd"] = json!(cwd);
        }
        v
    }
}

/// One process started through envd.
#[derive(Debug, Clone)]
pub(crate) struct ProcEntry {
    pub config: ProcessConfig,
    pub tag: Option<String>,
    /// Where its stdin (or terminal input) goes, while open.
    pub stdin: Option<u32>,
    pub pty: bool,
}

/// The E2B processes of one box, by pid.
#[derive(Default)]
pub(crate) struct Procs {
    by_pid: Mutex<HashMap<i32, ProcEntry>>,
}

impl Procs {
    fn lock(&self) -> MutexGuard<'_, HashMap<i32, ProcEntry>> {
        self.by_pid.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn insert(&self, pid: i32, entry: ProcEntry) {
        let mut map = self.lock();
        if map.len() >= MAX_PROCS {
            // Forget the lowest pids first; they are the oldest unless pids wrapped.
            if let Some(oldest) = map.keys().min().copied() {
                map.remove(&oldest);
            }
        }
        map.insert(pid, entry);
    }

    pub(crate) fn get(&self, pid: i32) -> Option<ProcEntry> {
        self.lock().get(&pid).cloned()
    }

    /// The pid of the newest process with `tag`.
    pub(crate) fn by_tag(&self, tag: &str) -> Option<i32> {
        self.lock()
            .iter()
            .filter(|(_, e)| e.tag.as_deref() == Some(tag))
            .map(|(p, _)| *p)
            .max()
    }

    /// Forgets a process's stdin channel (after CloseStdin) and returns what it was.
    pub(crate) fn take_stdin(&self, pid: i32) -> Option<u32> {
        self.lock().get_mut(&pid).and_then(|e| e.stdin.take())
    }

    pub(crate) fn remove(&self, pid: i32) {
        self.lock().remove(&pid);
    }
}

/// envd's `ProcessSelector`: `{"pid": n}` or `{"tag": "..."}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Selector {
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub tag: Option<String>,
}

/// Why a selector names no process.
pub(crate) fn resolve(procs: &Procs, sel: &Selector) -> Result<i32, String> {
    match (sel.pid, &sel.tag) {
        (Some(pid), _) => i32::try_from(pid).map_err(|_| format!("process {pid} not found")),
        (None, Some(tag)) => procs
            .by_tag(tag)
            .ok_or_else(|| format!("no process with tag {tag:?}")),
        (None, None) => Err("the process selector is empty: give \"pid\" or \"tag\"".into()),
    }
}

/// Go's name for a signal (`ProcessState.String()` prints `signal: <name>`).
fn signal_name(sig: i32) -> String {
    match sig {
        1 => "hangup".into(),
        2 => "interrupt".into(),
        3 => "quit".into(),
        4 => "illegal instruction".into(),
        6 => "aborted".into(),
        9 => "killed".into(),
        11 => "segmentation fault".into(),
        13 => "broken pipe".into(),
        14 => "alarm clock".into(),
        15 => "terminated".into(),
        other => format!("signal {other}"),
    }
}

pub(crate) fn event(v: Value) -> Value {
    json!({"event": v})
}

pub(crate) fn start_event(pid: i32) -> Value {
    event(json!({"start": {"pid": pid}}))
}

pub(crate) fn keepalive_event() -> Value {
    event(json!({"keepalive": {}}))
}

/// envd's `EndEvent` for how a process ended: exit code -1 and `signal: <name>` when signalled.
pub(crate) fn end_event(exit: &ExitInfo) -> Value {
    match (exit.exit_code, exit.signal) {
        (Some(code), _) => {
            let mut end =
                json!({"exitCode": code, "exited": true, "status": format!("exit status {code}")});
            if code != 0 {
                end["error"] = json!(format!("exit status {code}"));
            }
            event(json!({"end": end}))
        }
        (None, sig) => {
            let status = format!("signal: {}", signal_name(sig.unwrap_or(0)));
            event(
                json!({"end": {"exitCode": -1, "exited": false, "status": status, "error": status}}),
            )
        }
    }
}

/// Relays what `started` does as envd events until it ends (`true`), its client goes away (the
/// process runs on, detached: `false`) or the box is lost. A process killed by its timeout (the
/// agent enforces the call's `Connect-Timeout-Ms`, as envd does) ends the stream with
/// `deadline_exceeded`. Keepalives every `keepalive` while quiet.
pub(crate) fn relay(
    session: &mut AgentChannel,
    started: &ExecReply,
    pty: bool,
    keepalive: Duration,
    tx: &mpsc::Sender<Result<Value, E2bError>>,
) -> Relayed {
    let b64 = base64::engine::general_purpose::STANDARD;
    loop {
        if tx.is_closed() {
            return Relayed::ClientLeft;
        }
        let next = match session.next_output(started, Instant::now() + keepalive) {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.blocking_send(Err(lost(&e)));
                return Relayed::Lost;
            }
        };
        let item = match next {
            None => keepalive_event(),
            Some(ProcessOutput::Stdout(data)) => {
                let key = if pty { "pty" } else { "stdout" };
                event(json!({"data": {key: b64.encode(data)}}))
            }
            Some(ProcessOutput::Stderr(data)) => {
                event(json!({"data": {"stderr": b64.encode(data)}}))
            }
            Some(ProcessOutput::Exit(exit)) if exit.timed_out => {
                let _ = tx.blocking_send(Err(E2bError::DeadlineExceeded(
                    "the command's timeout passed; it was killed".into(),
                )));
                return Relayed::Ended;
            }
            Some(ProcessOutput::Exit(exit)) => {
                let _ = tx.blocking_send(Ok(end_event(&exit)));
                return Relayed::Ended;
            }
        };
        if tx.blocking_send(Ok(item)).is_err() {
            return Relayed::ClientLeft;
        }
    }
}

/// How a relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relayed {
    /// The process ended (its end was sent).
    Ended,
    /// The client went away; the process runs on.
    ClientLeft,
    /// The box's agent could not be read (the box is gone, or its connection failed).
    Lost,
}

/// Reads `started`'s output (and drops it) until it ends: `true`, or until the box's agent
/// cannot be read: `false`. For a command whose client left: it is still work.
pub(crate) fn wait_end(session: &mut AgentChannel, started: &ExecReply) -> bool {
    loop {
        match session.next_output(started, Instant::now() + Duration::from_secs(60)) {
            Ok(Some(ProcessOutput::Exit(_))) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

fn lost(e: &SandboxError) -> E2bError {
    E2bError::SandboxGone(format!("lost the sandbox while relaying the process: {e}"))
}

#[cfg(test)]
#[path = "procs_tests.rs"]
mod tests;
