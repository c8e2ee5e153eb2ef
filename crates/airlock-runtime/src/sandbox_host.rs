//! One process per long-lived sandbox: the box's supervisor. A multi-threaded program (the
//! server) cannot start boxes itself (their setup runs between clone and exec), so it starts
//! `airlock sandbox-host`, a fresh single-threaded process, which creates the [`Sandbox`], hands
//! the agent connection back over its control socket, and then holds the box (cgroup, proxy,
//! cleanup) until told to kill it, until the box ends, or until its parent goes away.
//!
//! The control socket is a SEQPACKET unix socket (one JSON message per packet, see
//! [`ToHost`]/[`FromHost`]); the `started` reply carries the agent connection as SCM_RIGHTS.

use crate::sandbox::{Sandbox, SandboxOptions};
use airlock_policy::ResolvedPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

/// Largest control message.
pub(crate) const MAX_CONTROL: usize = 1 << 20;

/// Messages from the owner to the sandbox host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ToHost {
    Start {
        policy: Box<ResolvedPolicy>,
        audit: Option<PathBuf>,
    },
    Network {
        allow_domain: Vec<String>,
        deny_domain: Vec<String>,
        allow_ip: Vec<String>,
        map_host: Vec<String>,
    },
    Kill {},
}

/// Messages from the sandbox host to its owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum FromHost {
    /// The box runs; the agent connection is attached.
    Started {
        init_pid: i32,
        receipt: serde_json::Value,
        env: BTreeMap<String, String>,
        cwd: String,
    },
    Error {
        message: String,
    },
    Ok {},
    /// The box ended on its own.
    Exited {
        reason: String,
    },
}

fn send(control: &OwnedFd, msg: &FromHost, fd: Option<libc::c_int>) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    airlock_jail::net::send_with_fd(control.as_raw_fd(), &bytes, fd)
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
    let mut buf = vec![0u8; MAX_CONTROL];
    let (policy, audit) = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf) {
        Ok((n, _)) if n > 0 => match serde_json::from_slice::<ToHost>(&buf[..n]) {
            Ok(ToHost::Start { policy, audit }) => (policy, audit),
            Ok(_) => {
                let _ = send(
                    &control,
                    &FromHost::Error {
                        message: "the first message must be start".into(),
                    },
                    None,
                );
                return 2;
            }
            Err(e) => {
                let _ = send(
                    &control,
                    &FromHost::Error {
                        message: format!("bad start message: {e}"),
                    },
                    None,
                );
                return 2;
            }
        },
        _ => return 2,
    };
    let mut sandbox = match Sandbox::create(&policy, &SandboxOptions { audit }) {
        Ok(s) => s,
        Err(e) => {
            let _ = send(
                &control,
                &FromHost::Error {
                    message: e.to_string(),
                },
                None,
            );
            return 1;
        }
    };
    let receipt = sandbox
        .receipt()
        .and_then(|r| serde_json::to_value(r).ok())
        .unwrap_or_default();
    let init_pid = sandbox.init_pid().unwrap_or(0);
    let Some(session) = sandbox.take_session() else {
        let _ = send(
            &control,
            &FromHost::Error {
                message: "the box's agent is not connected".into(),
            },
            None,
        );
        return 1;
    };
    let (client, env, cwd) = session.into_parts();
    let Some(stream) = client.into_stream() else {
        let _ = send(
            &control,
            &FromHost::Error {
                message: "the box's agent connection cannot be handed over".into(),
            },
            None,
        );
        return 1;
    };
    let started = FromHost::Started {
        init_pid,
        receipt,
        env,
        cwd,
    };
    if send(&control, &started, Some(stream.as_raw_fd())).is_err() {
        return 1;
    }
    drop(stream);
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
            break;
        }
        if fds[1].revents != 0 {
            let _ = send(
                &control,
                &FromHost::Exited {
                    reason: "the box's agent ended".into(),
                },
                None,
            );
            break;
        }
        if fds[0].revents == 0 {
            continue;
        }
        let n = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => break,
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
            Ok(ToHost::Kill {}) => break,
            Ok(ToHost::Network {
                allow_domain,
                deny_domain,
                allow_ip,
                map_host,
            }) => {
                match airlock_proxy::rules::EgressRules::parse(
                    &allow_domain,
                    &deny_domain,
                    &allow_ip,
                    &map_host,
                ) {
                    Ok(rules) => match sandbox.set_network(rules) {
                        Ok(()) => FromHost::Ok {},
                        Err(e) => FromHost::Error {
                            message: e.to_string(),
                        },
                    },
                    Err(e) => FromHost::Error {
                        message: format!("invalid network policy: {e}"),
                    },
                }
            }
            Ok(ToHost::Start { .. }) => FromHost::Error {
                message: "the sandbox is already started".into(),
            },
            Err(e) => FromHost::Error {
                message: format!("bad control message: {e}"),
            },
        };
        if send(&control, &reply, None).is_err() {
            break;
        }
    }
    sandbox.close();
    0
}
