//! One process per long-lived sandbox: the box's supervisor. A multi-threaded program (the
//! server) cannot start boxes itself (their setup runs between clone and exec), so it starts
//! `airlock sandbox-host`, a fresh single-threaded process, which creates the [`Sandbox`], hands
//! the agent connection back over its control socket, and then holds the box (cgroup, proxy,
//! cleanup) until told to kill it, until the box ends, or until its parent goes away.
//!
//! The control socket is a SEQPACKET unix socket carrying one typed message per packet
//! ([`ToHost`]/[`FromHost`], JSON-encoded); the `started` reply carries the agent connection as
//! SCM_RIGHTS. Requests are answered in order; `network` and `exited` messages come whenever
//! they happen, between replies.

use crate::host_loop::{HeldBox, StartRequest, StartedBox};
use crate::sandbox::{Sandbox, SandboxOptions};
use airlock_policy::{ApprovalAnswer, ApprovalRequest, Egress, ResolvedPolicy, SecretValues};
use airlock_runtime::backend::{
    Capabilities, Checkpoint, NetDecision, NetProtocol, NetworkEvent, Template, Usage,
};
use airlock_runtime::Receipt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// Largest control message.
pub const MAX_CONTROL: usize = 1 << 20;

/// Messages from the owner to a box's host process (`airlock sandbox-host`, or another
/// backend's host process speaking the same protocol).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToHost {
    /// The first message: start the box.
    Start {
        policy: Box<ResolvedPolicy>,
        /// The root filesystem to start from.
        #[serde(default)]
        template: Box<Template>,
        /// Also append network decisions to this JSON-lines file.
        audit: Option<PathBuf>,
        /// Send each network decision as a `network` message.
        network_events: bool,
        /// The values of the policy's secrets (the policy is serialized without them).
        #[serde(default)]
        secret_values: SecretValues,
        /// Start from the checkpoint in this directory instead of a fresh box (backends that
        /// can).
        #[serde(default)]
        restore: Option<PathBuf>,
        /// The owner answers held connections (approval `on-request` with no approver
        /// program): send each as an `approval_requested` message.
        #[serde(default)]
        approvals: bool,
    },
    /// The owner's answer to held connection `id`, given in `by`'s name. Replied to with `ok`,
    /// `error` (the answer cannot be applied) or `not_pending`.
    Approval {
        id: u64,
        answer: ApprovalAnswer,
        by: String,
    },
    /// Replace the egress allowlist (proxied boxes).
    Egress {
        egress: Box<Egress>,
    },
    /// Report what the box uses now.
    Usage {},
    /// Answer `ok` once every message sent before it (network events included) is on its way.
    Sync {},
    /// Stop every process of the box in place (backends that can).
    Pause {},
    /// Continue a paused box.
    Resume {},
    /// Stop the box while it waits unclaimed in a pool (boxes whose capabilities say `park`).
    Park {},
    /// Continue a parked box.
    Unpark {},
    /// Write the box's state into `dir` (backends that can).
    Checkpoint {
        dir: PathBuf,
        then_stop: bool,
    },
    Kill {},
}

/// Messages from a box's host process to its owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FromHost {
    /// The box runs; the agent connection is attached.
    Started {
        receipt: Receipt,
        env: BTreeMap<String, String>,
        cwd: String,
        /// What the box can do beyond the basics (`None`: what a native box can).
        #[serde(default)]
        capabilities: Option<Capabilities>,
    },
    Error {
        message: String,
    },
    Ok {},
    Usage {
        usage: Usage,
    },
    /// The checkpoint asked for is written.
    Checkpointed {
        checkpoint: Checkpoint,
    },
    /// One network decision of the box's proxy (unrequested).
    Network {
        event: Box<NetworkEvent>,
    },
    /// A connection is held until the owner answers `request` (unrequested).
    ApprovalRequested {
        request: Box<ApprovalRequest>,
    },
    /// Held connection `id` was refused at its deadline, unanswered (unrequested).
    ApprovalWithdrawn {
        id: u64,
    },
    /// The approval answered is not waiting (answered before, timed out, or never asked).
    NotPending {
        message: String,
    },
    /// The box ended on its own (unrequested).
    Exited {
        reason: String,
    },
}

/// The proxy's event as the seam's typed value (the same JSON object as the proxy's own).
pub fn network_event(e: &airlock_proxy::audit::NetEvent) -> NetworkEvent {
    NetworkEvent {
        time_ms: u64::try_from(e.time_ms).unwrap_or(u64::MAX),
        protocol: match e.protocol {
            "connect" => NetProtocol::Connect,
            "socks5" => NetProtocol::Socks5,
            "https" => NetProtocol::Https,
            _ => NetProtocol::Http,
        },
        host: e.host.clone(),
        port: e.port,
        addr: e.addr.map(|a| a.to_string()),
        decision: match e.decision {
            "allow" => NetDecision::Allow,
            "ask" => NetDecision::Ask,
            _ => NetDecision::Deny,
        },
        reason: e.reason.clone(),
        rule: e.rule.clone(),
        message: e.message.clone(),
        bytes_up: e.bytes_up,
        bytes_down: e.bytes_down,
        duration_ms: e.duration_ms,
        intercepted: e.intercepted,
        secrets: e.secrets.clone(),
        approval: e.approval.clone(),
        denial: e.denial.clone(),
    }
}

/// The `airlock sandbox-host` process: serves one sandbox over `control`. Returns the exit code.
pub fn sandbox_host_main(control: OwnedFd) -> i32 {
    crate::host_loop::host_main(control, start_native)
}

fn start_native(req: StartRequest) -> Result<StartedBox, String> {
    req.template.agrees_with(&req.policy)?;
    if req.restore.is_some() {
        return Err("a native box cannot start from a checkpoint".into());
    }
    let opts = SandboxOptions {
        audit: req.audit,
        on_event: req.on_event,
        asker: req.asker,
        sentinel: req.sentinel.map(std::sync::Arc::new),
    };
    let mut sandbox = Sandbox::create(&req.policy, &opts).map_err(|e| e.to_string())?;
    let Some(receipt) = sandbox.receipt().cloned() else {
        return Err("the box started without a receipt".into());
    };
    let Some(session) = sandbox.take_channel() else {
        return Err("the box's agent is not connected".into());
    };
    let (client, env, cwd) = session.into_parts();
    let Some(agent) = client.into_stream() else {
        return Err("the box's agent connection cannot be handed over".into());
    };
    let capabilities = Capabilities {
        live_egress: req.policy.network == airlock_policy::NetworkMode::Proxy,
        pause: sandbox.can_freeze().is_ok(),
        checkpoint: None,
        // An idle native box's processes all wait in the kernel: nothing to stop.
        park: false,
    };
    Ok(StartedBox {
        held: Box::new(sandbox),
        agent,
        receipt,
        env,
        cwd,
        capabilities: Some(capabilities),
    })
}

impl HeldBox for Sandbox {
    fn end_fd(&self) -> libc::c_int {
        self.init_pidfd().unwrap_or(-1)
    }

    fn end_reason(&self) -> String {
        "the box's agent ended".into()
    }

    fn usage(&mut self) -> Usage {
        Sandbox::usage(self)
    }

    fn set_egress(&mut self, egress: &Egress) -> Result<(), String> {
        Sandbox::set_egress(self, egress).map_err(|e| e.to_string())
    }

    fn pause(&mut self) -> Result<(), String> {
        self.freeze()
    }

    fn resume(&mut self) -> Result<(), String> {
        self.thaw()
    }

    fn close(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_are_typed_and_unknown_fields_are_refused() {
        let msg = FromHost::Usage {
            usage: Usage {
                cpu_usec: Some(5),
                ..Usage::default()
            },
        };
        let text = serde_json::to_string(&msg).unwrap();
        match serde_json::from_str::<FromHost>(&text).unwrap() {
            FromHost::Usage { usage } => assert_eq!(usage.cpu_usec, Some(5)),
            other => panic!("{other:?}"),
        }
        assert!(serde_json::from_str::<ToHost>(r#"{"kill":{"now":true}}"#).is_err());
        assert!(serde_json::from_str::<ToHost>(r#"{"usage":{}}"#).is_ok());
    }
}
