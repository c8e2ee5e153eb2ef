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

use crate::sandbox::{Sandbox, SandboxOptions};
use airlock_policy::{Egress, ResolvedPolicy, SecretValues};
use airlock_runtime::backend::{
    Capabilities, NetDecision, NetProtocol, NetworkEvent, Template, Usage,
};
use airlock_runtime::Receipt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

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
    /// One network decision of the box's proxy (unrequested).
    Network {
        event: NetworkEvent,
    },
    /// The box ended on its own (unrequested).
    Exited {
        reason: String,
    },
}

fn send(control: &OwnedFd, msg: &FromHost, fd: Option<libc::c_int>) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    airlock_jail::net::send_with_fd(control.as_raw_fd(), &bytes, fd)
}

fn refuse(control: &OwnedFd, message: String) {
    let _ = send(control, &FromHost::Error { message }, None);
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
        decision: if e.decision == "allow" {
            NetDecision::Allow
        } else {
            NetDecision::Deny
        },
        reason: e.reason.clone(),
        rule: e.rule.clone(),
        message: e.message.clone(),
        bytes_up: e.bytes_up,
        bytes_down: e.bytes_down,
        duration_ms: e.duration_ms,
        intercepted: e.intercepted,
        secrets: e.secrets.clone(),
    }
}

/// The `airlock sandbox-host` process: serves one sandbox over `control`. Returns the exit code.
pub fn sandbox_host_main(control: OwnedFd) -> i32 {
    // If the owner dies, so does this process, and with it (parent-death signals) the box.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    // SAFETY: getppid cannot fail; 1 means the owner is already gone.
    if unsafe { libc::getppid() } == 1 {
        return 1;
    }
    let control = Arc::new(control);
    let mut buf = vec![0u8; MAX_CONTROL];
    let (policy, audit, network_events) =
        match airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf) {
            Ok((n, _)) if n > 0 => match serde_json::from_slice::<ToHost>(&buf[..n]) {
                Ok(ToHost::Start {
                    mut policy,
                    template,
                    audit,
                    network_events,
                    secret_values,
                }) => match template.agrees_with(&policy) {
                    Ok(()) => {
                        secret_values.restore(&mut policy);
                        (policy, audit, network_events)
                    }
                    Err(why) => {
                        refuse(&control, why);
                        return 2;
                    }
                },
                Ok(_) => {
                    refuse(&control, "the first message must be start".into());
                    return 2;
                }
                Err(e) => {
                    refuse(&control, format!("bad start message: {e}"));
                    return 2;
                }
            },
            _ => return 2,
        };
    // The start message held the secrets' values.
    // (As a slice: zeroizing the Vec itself would also empty it, and the next request would be
    // read into no buffer at all, ending the host.)
    zeroize::Zeroize::zeroize(buf.as_mut_slice());
    let on_event: Option<airlock_proxy::audit::EventSink> = network_events.then(|| {
        let control = Arc::clone(&control);
        let sink: airlock_proxy::audit::EventSink = Arc::new(move |e| {
            let _ = send(
                &control,
                &FromHost::Network {
                    event: network_event(e),
                },
                None,
            );
        });
        sink
    });
    let mut sandbox = match Sandbox::create(&policy, &SandboxOptions { audit, on_event }) {
        Ok(s) => s,
        Err(e) => {
            refuse(&control, e.to_string());
            return 1;
        }
    };
    let Some(receipt) = sandbox.receipt().cloned() else {
        refuse(&control, "the box started without a receipt".into());
        return 1;
    };
    let Some(session) = sandbox.take_channel() else {
        refuse(&control, "the box's agent is not connected".into());
        return 1;
    };
    let (client, env, cwd) = session.into_parts();
    let Some(stream) = client.into_stream() else {
        refuse(
            &control,
            "the box's agent connection cannot be handed over".into(),
        );
        return 1;
    };
    let started = FromHost::Started {
        receipt,
        env,
        cwd,
        capabilities: Some(Capabilities {
            live_egress: policy.network == airlock_policy::NetworkMode::Proxy,
            pause: sandbox.can_freeze().is_ok(),
            checkpoint: None,
        }),
    };
    if send(&control, &started, Some(stream.as_raw_fd())).is_err() {
        return 1;
    }
    drop(stream);
    serve(&control, &mut sandbox, &mut buf);
    sandbox.close();
    0
}

fn done(result: Result<(), String>) -> FromHost {
    match result {
        Ok(()) => FromHost::Ok {},
        Err(message) => FromHost::Error { message },
    }
}

/// Answers requests until told to kill the box, the box ends, or the owner goes away.
fn serve(control: &OwnedFd, sandbox: &mut Sandbox, buf: &mut [u8]) {
    let pidfd = sandbox.init_pidfd().unwrap_or(-1);
    loop {
        let mut fds = [
            libc::pollfd {
                fd: control.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: a valid array of two pollfds.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            let reason = "the box's agent ended".to_string();
            let _ = send(control, &FromHost::Exited { reason }, None);
            return;
        }
        if fds[0].revents == 0 {
            continue;
        }
        let n = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), buf) {
            Ok((0, _)) | Err(_) => return,
            Ok((n, fd)) => {
                if let Some(fd) = fd {
                    // Descriptors are never expected here.
                    // SAFETY: closing a descriptor we just received and own.
                    unsafe { libc::close(fd) };
                }
                n
            }
        };
        let reply = match serde_json::from_slice::<ToHost>(&buf[..n]) {
            Ok(ToHost::Kill {}) => return,
            Ok(ToHost::Sync {}) => FromHost::Ok {},
            Ok(ToHost::Usage {}) => FromHost::Usage {
                usage: sandbox.usage(),
            },
            Ok(ToHost::Egress { egress }) => match sandbox.set_egress(&egress) {
                Ok(()) => FromHost::Ok {},
                Err(e) => FromHost::Error {
                    message: e.to_string(),
                },
            },
            Ok(ToHost::Start { .. }) => FromHost::Error {
                message: "the sandbox is already started".into(),
            },
            Ok(ToHost::Pause {}) => done(sandbox.freeze()),
            Ok(ToHost::Resume {}) => done(sandbox.thaw()),
            Err(e) => FromHost::Error {
                message: format!("bad control message: {e}"),
            },
        };
        if send(control, &reply, None).is_err() {
            return;
        }
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
