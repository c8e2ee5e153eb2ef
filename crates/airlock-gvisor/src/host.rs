//! `airlock gvisor-host`: the process that holds one gVisor box. It speaks the same control
//! protocol as the native `airlock sandbox-host` ([`ToHost`]/[`FromHost`]), so the owner's side
//! is shared, and it owns everything the box needs on the host: the private mount namespace
//! and its tmpfs ([`Layout`]), the cgroup around runsc (removed by the native cleanup sentinel
//! if this process is killed), the proxy's network namespace and the proxy itself.

use crate::box_start::{BoxStart, StartError};
use crate::runsc::Runsc;
use airlock_native::{FromHost, ToHost, MAX_CONTROL};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

fn send(control: &OwnedFd, msg: &FromHost, fd: Option<libc::c_int>) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    airlock_jail::net::send_with_fd(control.as_raw_fd(), &bytes, fd)
}

fn refuse(control: &OwnedFd, message: String) {
    let _ = send(control, &FromHost::Error { message }, None);
}

/// The `airlock gvisor-host` process: serves one gVisor box over `control` with `runsc`.
/// Returns the exit code.
pub fn gvisor_host_main(control: OwnedFd, runsc: Result<Runsc, String>) -> i32 {
    // If the owner dies, so does this process, and with it runsc (its parent-death signal) and
    // the sandbox; the sentinel then empties and removes the cgroup.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    // SAFETY: getppid cannot fail; 1 means the owner is already gone.
    if unsafe { libc::getppid() } == 1 {
        return 1;
    }
    let control = Arc::new(control);
    let mut buf = vec![0u8; MAX_CONTROL];
    let start = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf) {
        Ok((n, _)) if n > 0 => match serde_json::from_slice::<ToHost>(&buf[..n]) {
            Ok(msg @ ToHost::Start { .. }) => msg,
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
    let ToHost::Start {
        mut policy,
        template,
        audit,
        network_events,
        secret_values,
    } = start
    else {
        return 2;
    };
    secret_values.restore(&mut policy);
    let runsc = match runsc {
        Ok(r) => r,
        Err(e) => {
            refuse(&control, e);
            return 1;
        }
    };
    let on_event: Option<airlock_proxy::audit::EventSink> = network_events.then(|| {
        let control = Arc::clone(&control);
        let sink: airlock_proxy::audit::EventSink = Arc::new(move |e| {
            let event = airlock_native::network_event(e);
            let _ = send(&control, &FromHost::Network { event }, None);
        });
        sink
    });
    let mut running = match BoxStart::new(&runsc, &policy, &template, audit, on_event).start() {
        Ok(r) => r,
        Err(StartError::Refused(message)) => {
            refuse(&control, message);
            return 1;
        }
    };
    let started = FromHost::Started {
        receipt: running.receipt.clone(),
        env: running.env.clone(),
        cwd: running.cwd.clone(),
        capabilities: Some(running.capabilities()),
    };
    let Some(agent) = running.agent.take() else {
        refuse(&control, "the box's agent is not connected".into());
        return 1;
    };
    if send(&control, &started, Some(agent.as_raw_fd())).is_err() {
        return 1;
    }
    drop(agent);
    serve(&control, &mut running, &mut buf);
    running.close();
    0
}

/// Answers requests until told to kill the box, the box ends, or the owner goes away.
fn serve(control: &OwnedFd, running: &mut crate::box_start::RunningBox, buf: &mut [u8]) {
    let pidfd = running.runsc_pidfd();
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
            let reason = "the box's agent ended (runsc exited)".to_string();
            let _ = send(control, &FromHost::Exited { reason }, None);
            return;
        }
        if fds[0].revents == 0 {
            continue;
        }
        let n = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), buf) {
            Ok((0, _)) | Err(_) => return,
            Ok((n, fd)) => {
                // A descriptor is never expected here: dropping it closes it.
                // SAFETY: a descriptor just received over SCM_RIGHTS is ours alone.
                drop(fd.map(|fd| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }));
                n
            }
        };
        let answer = |r: Result<(), String>| match r {
            Ok(()) => FromHost::Ok {},
            Err(message) => FromHost::Error { message },
        };
        let reply = match serde_json::from_slice::<ToHost>(&buf[..n]) {
            Ok(ToHost::Kill {}) => return,
            Ok(ToHost::Sync {}) => FromHost::Ok {},
            Ok(ToHost::Usage {}) => FromHost::Usage {
                usage: running.usage(),
            },
            Ok(ToHost::Egress { egress }) => answer(running.set_egress(&egress)),
            Ok(ToHost::Pause {}) => answer(running.pause()),
            Ok(ToHost::Resume {}) => answer(running.resume()),
            Ok(ToHost::Start { .. }) => FromHost::Error {
                message: "the sandbox is already started".into(),
            },
            Err(e) => FromHost::Error {
                message: format!("bad control message: {e}"),
            },
        };
        if send(control, &reply, None).is_err() {
            return;
        }
    }
}
