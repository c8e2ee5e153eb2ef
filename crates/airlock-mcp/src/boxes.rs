//! The box of one MCP session: started on the first tool call that needs it, reused by every
//! later call, ended when the session ends (the slot is dropped) or when it has been idle too
//! long. Boxes are [`LiveSandbox`]es started through the backend seam, so they can be started
//! from any thread; a [`StartBox`] decides how (and may count them).

use crate::held::HeldAsker;
use airlock_policy::{NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::{
    ApprovalSink, Backends, NetDecision, NetworkEvent, NetworkSink, StartOptions, Template,
};
use airlock_runtime::{CodeContext, LiveSandbox, SandboxError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Refusals kept between two tool calls; more are counted, not kept.
const MAX_DENIALS: usize = 256;

/// Starts boxes.
pub trait StartBox: Send + Sync {
    /// Starts a box under `policy`.
    fn start(
        &self,
        policy: &ResolvedPolicy,
        opts: &StartOptions,
    ) -> Result<LiveSandbox, SandboxError>;

    /// A box this starter started has ended (its slot let it go); for starters that count.
    fn ended(&self) {}
}

/// A [`StartBox`] that starts each box with the backend its policy names.
pub struct BackendStarter {
    backends: Backends,
}

impl BackendStarter {
    pub fn new(backends: Backends) -> BackendStarter {
        BackendStarter { backends }
    }
}

impl StartBox for BackendStarter {
    fn start(
        &self,
        policy: &ResolvedPolicy,
        opts: &StartOptions,
    ) -> Result<LiveSandbox, SandboxError> {
        let backend = self.backends.select(policy.backend)?;
        LiveSandbox::start(backend.as_ref(), policy, &Template::of_policy(policy), opts)
    }
}

/// The network refusals of one box since they were last read.
#[derive(Default)]
struct Denials {
    lines: Vec<String>,
    dropped: usize,
}

/// Collects a box's refused connections as sentences for the next tool result.
#[derive(Default)]
struct DenialSink(Mutex<Denials>);

impl NetworkSink for DenialSink {
    fn network_event(&self, e: NetworkEvent) {
        if e.decision != NetDecision::Deny {
            return;
        }
        let msg = e
            .message
            .or(e.reason)
            .unwrap_or_else(|| "not allowed".into());
        let line = format!(
            "airlock refused a network connection to {}:{}: {msg}",
            e.host, e.port
        );
        let mut d = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if d.lines.len() < MAX_DENIALS {
            d.lines.push(line);
        } else {
            d.dropped += 1;
        }
    }
}

/// A running box and its interpreter contexts.
pub struct LiveBox {
    pub sandbox: LiveSandbox,
    /// Interpreter contexts by name.
    pub contexts: HashMap<String, CodeContext>,
    /// The proxy's refusals (proxied boxes).
    denials: Option<Arc<DenialSink>>,
}

impl LiveBox {
    /// Network refusals recorded since the last call, one readable line each.
    pub fn new_denials(&mut self) -> Vec<String> {
        let Some(sink) = &self.denials else {
            return Vec::new();
        };
        // A refusal the code just saw is recorded before the box heard of it: make sure its
        // event has arrived (a box that ended has nothing more to deliver).
        let _ = self.sandbox.flush_network_events();
        let mut d = sink.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut lines = std::mem::take(&mut d.lines);
        if d.dropped > 0 {
            lines.push(format!(
                "airlock refused {} more network connections",
                d.dropped
            ));
            d.dropped = 0;
        }
        lines
    }
}

/// The box slot of one session.
pub struct BoxSlot {
    policy: ResolvedPolicy,
    starter: Arc<dyn StartBox>,
    live: Option<LiveBox>,
    last_used: Instant,
    /// The box is paused (frozen in place) until the next call.
    paused: bool,
    /// Where each box's proxy appends its network decisions (`airlock mcp --audit`).
    audit_file: Option<std::path::PathBuf>,
    /// Who the boxes' held connections are asked about (the session's client).
    held: Option<Arc<HeldAsker>>,
    /// The filesystem grants people made in this session (`read:PATH`, `write:PATH`).
    path_grants: Vec<String>,
}

impl BoxSlot {
    /// An empty slot: nothing runs until [`BoxSlot::get`].
    pub fn new(policy: ResolvedPolicy, starter: Arc<dyn StartBox>) -> BoxSlot {
        BoxSlot {
            policy,
            starter,
            live: None,
            last_used: Instant::now(),
            paused: false,
            audit_file: None,
            held: None,
            path_grants: Vec::new(),
        }
    }

    /// The same, asking `held` about every box's held connections (its policy must ask).
    pub fn with_held_asker(mut self, held: Option<Arc<HeldAsker>>) -> BoxSlot {
        self.held = held;
        self
    }

    /// The same, with every box's network decisions appended to `file` (with `--net proxy`).
    pub fn with_audit_file(mut self, file: Option<std::path::PathBuf>) -> BoxSlot {
        self.audit_file = file;
        self
    }

    /// The box, started now if there is none.
    pub fn get(&mut self) -> Result<&mut LiveBox, SandboxError> {
        self.last_used = Instant::now();
        if self.paused {
            self.paused = false;
            if let Some(live) = self.live.as_mut() {
                if live.sandbox.resume().is_err() {
                    // A box that cannot be resumed is ended; this call starts a fresh one.
                    self.end();
                }
            }
        }
        if self.live.is_none() {
            let denials = (self.policy.network == NetworkMode::Proxy)
                .then(|| Arc::new(DenialSink::default()));
            let opts = StartOptions {
                network_events: denials.clone().map(|d| -> Arc<dyn NetworkSink> { d }),
                audit_file: self.audit_file.clone(),
                approvals: self.held.clone().map(|h| -> Arc<dyn ApprovalSink> { h }),
            };
            let sandbox = self.starter.start(&self.policy, &opts)?;
            if let Some(held) = &self.held {
                held.attach(sandbox.approval_answerer());
            }
            self.live = Some(LiveBox {
                sandbox,
                contexts: HashMap::new(),
                denials,
            });
        }
        self.last_used = Instant::now();
        self.live
            .as_mut()
            .ok_or(SandboxError::Agent(airlock_runtime::AgentError::Closed))
    }

    /// Ends the box (the next call starts a fresh one).
    pub fn end(&mut self) {
        self.paused = false;
        if let Some(live) = self.live.take() {
            drop(live);
            self.starter.ended();
        }
    }

    /// Pauses the box in place (the native box's cgroup freezer, `runsc pause` and then the
    /// freezer around gVisor's Sentry, QEMU's `stop`: CPU given back, every process and
    /// variable kept) if it has not been used for
    /// `idle`; the next call resumes it. Says whether it paused. A box that cannot pause, or
    /// whose pause failed, keeps running, and that is the error, saying why (the next check
    /// tries again; the caller says it once).
    pub fn pause_if_idle(&mut self, idle: Duration) -> Result<bool, SandboxError> {
        let Some(live) = self.live.as_mut() else {
            return Ok(false);
        };
        if self.paused || self.last_used.elapsed() < idle {
            return Ok(false);
        }
        // Tried even when the box says it cannot pause: its refusal says why.
        live.sandbox.pause()?;
        self.paused = true;
        Ok(true)
    }

    /// Ends the box if it has not been used for `idle`; says whether it did.
    pub fn end_if_idle(&mut self, idle: Duration) -> bool {
        if self.live.is_some() && self.last_used.elapsed() >= idle {
            self.end();
            return true;
        }
        false
    }
}

impl Drop for BoxSlot {
    fn drop(&mut self) {
        self.end();
    }
}

impl BoxSlot {
    /// Widens the allowlist by `entry` in `list` (a grant a person made): for the box that
    /// runs now (its proxy takes it for the connections that follow) and every box this slot
    /// starts later. `false`: it was already allowed.
    pub fn grant_egress(
        &mut self,
        list: airlock_policy::GrantList,
        entry: &str,
    ) -> Result<bool, SandboxError> {
        let egress = &mut self.policy.egress;
        let entries = match list {
            airlock_policy::GrantList::AllowDomain => &mut egress.allow_domain,
            airlock_policy::GrantList::AllowIp => &mut egress.allow_ip,
        };
        if entries.iter().any(|e| e == entry) {
            return Ok(false);
        }
        entries.push(entry.to_string());
        if let Some(live) = self.live.as_mut() {
            live.sandbox.set_egress(&self.policy.egress)?;
        }
        Ok(true)
    }

    /// Adds a filesystem grant a person made: the running box (a mount cannot be added to it)
    /// is ended, and the next call starts one with the grant. `false`: it was already there.
    pub fn grant_path(&mut self, mount: airlock_policy::Mount) -> Result<bool, String> {
        let what = format!(
            "{}:{}",
            match mount.access {
                airlock_policy::Access::ReadOnly => "read",
                airlock_policy::Access::ReadWrite => "write",
            },
            mount.host.display()
        );
        let added = airlock_policy::add_grant(&mut self.policy, mount)?;
        if added {
            self.path_grants.push(what);
            self.end();
        }
        Ok(added)
    }

    /// The filesystem grants made in this session.
    pub fn path_grants(&self) -> &[String] {
        &self.path_grants
    }

    /// The policy the next box starts under (this session's grants included).
    pub fn policy(&self) -> &ResolvedPolicy {
        &self.policy
    }

    /// The box, if one runs (without starting one).
    pub fn live_mut(&mut self) -> Option<&mut LiveBox> {
        self.live.as_mut()
    }
}

#[cfg(test)]
#[path = "boxes_tests.rs"]
mod tests;
