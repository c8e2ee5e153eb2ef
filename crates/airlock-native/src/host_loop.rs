//! The control loop every box's host process runs (`airlock sandbox-host`, `airlock
//! gvisor-host`): it reads the start message, starts the box through the backend's own hook,
//! hands the agent connection back, then answers requests until told to kill the box, until the
//! box ends, or until the owner goes away. What differs between backends is the [`HeldBox`].

use crate::owner_approver::{answer_from_owner, OwnerApprover, SendToOwner};
use crate::sandbox_host::{network_event, FromHost, ToHost, MAX_CONTROL};
use airlock_policy::{Egress, ResolvedPolicy};
use airlock_proxy::approval::{ApprovalError, PendingQueue};
use airlock_runtime::backend::{Capabilities, Checkpoint, Template, Usage};
use airlock_runtime::Receipt;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A running box as its host process holds it.
pub trait HeldBox {
    /// A descriptor that becomes readable when the box ends (a pidfd), or -1 for none.
    fn end_fd(&self) -> libc::c_int;
    /// Why the box ended, once [`HeldBox::end_fd`] became readable.
    fn end_reason(&self) -> String;
    fn usage(&mut self) -> Usage;
    /// Replaces the egress allowlist; an error is a sentence for the caller.
    fn set_egress(&mut self, egress: &Egress) -> Result<(), String>;
    fn pause(&mut self) -> Result<(), String> {
        Err("this box cannot pause".into())
    }
    fn resume(&mut self) -> Result<(), String> {
        Err("this box cannot pause".into())
    }
    /// Stops the box while it waits in a pool (see the seam's `BoxInstance::park`).
    fn park(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Continues a parked box.
    fn unpark(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Writes the box's state into `dir` (see the seam's `BoxInstance::checkpoint`).
    fn checkpoint(&mut self, dir: &Path, then_stop: bool) -> Result<Checkpoint, String> {
        let _ = (dir, then_stop);
        Err("this box cannot take checkpoints".into())
    }
    /// Ends the box and frees what it holds on the host.
    fn close(&mut self);
}

/// What a backend's start hook is given.
pub struct StartRequest {
    pub policy: Box<ResolvedPolicy>,
    pub template: Box<Template>,
    pub audit: Option<PathBuf>,
    /// Where the box's proxy sends each network decision (`None`: nobody asked for them).
    pub on_event: Option<airlock_proxy::audit::EventSink>,
    /// A checkpoint to start from instead of a fresh box.
    pub restore: Option<PathBuf>,
    /// Who the box's proxy asks about held connections when the policy names no approver
    /// program: the owner, over the control socket (`None`: the owner does not answer).
    pub asker: Option<airlock_proxy::approval::Asker>,
    /// A connection to the owner's shared cleanup sentinel, sent with the start message (native
    /// boxes under a server; `None`: the box forks a sentinel of its own).
    pub sentinel: Option<OwnedFd>,
}

/// What a backend's start hook returns: the box and what the owner is told about it.
pub struct StartedBox {
    pub held: Box<dyn HeldBox>,
    pub agent: UnixStream,
    pub receipt: Receipt,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    /// `None`: what a native box can.
    pub capabilities: Option<Capabilities>,
}

fn send(control: &OwnedFd, msg: &FromHost, fd: Option<libc::c_int>) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    airlock_jail::net::send_with_fd(control.as_raw_fd(), &bytes, fd)
}

fn refuse(control: &OwnedFd, message: String) {
    let _ = send(control, &FromHost::Error { message }, None);
}

/// Runs a host process on `control`: `start` makes the box from the owner's start message.
/// Returns the process's exit code.
pub fn host_main(
    control: OwnedFd,
    start: impl FnOnce(StartRequest) -> Result<StartedBox, String>,
) -> i32 {
    // If the owner dies, so does this process, and with it (parent-death signals) the box.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    // SAFETY: getppid cannot fail; 1 means the owner is already gone.
    if unsafe { libc::getppid() } == 1 {
        return 1;
    }
    let control = Arc::new(control);
    let mut buf = vec![0u8; MAX_CONTROL];
    let (received, sentinel) = match airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf)
    {
        // SAFETY: a descriptor received over SCM_RIGHTS is new in this process, and ours.
        Ok((n, fd)) if n > 0 => (n, fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })),
        _ => return 2,
    };
    let (policy, template, audit, network_events, restore, approvals) =
        match serde_json::from_slice::<ToHost>(&buf[..received]) {
            Ok(ToHost::Start {
                mut policy,
                template,
                audit,
                network_events,
                secret_values,
                restore,
                approvals,
            }) => {
                secret_values.restore(&mut policy);
                (policy, template, audit, network_events, restore, approvals)
            }
            Ok(_) => {
                refuse(&control, "the first message must be start".into());
                return 2;
            }
            Err(e) => {
                refuse(&control, format!("bad start message: {e}"));
                return 2;
            }
        };
    // The start message held the secrets' values. Only the bytes it filled: the rest of the
    // buffer was never written, and zeroing all of it made the whole megabyte resident in
    // every box's host process. (A slice, not the Vec: zeroizing a Vec also empties it, and
    // the loop below reads its requests into this buffer.)
    zeroize::Zeroize::zeroize(&mut buf[..received]);
    let on_event: Option<airlock_proxy::audit::EventSink> = network_events.then(|| {
        let control = Arc::clone(&control);
        let sink: airlock_proxy::audit::EventSink = Arc::new(move |e| {
            let event = Box::new(network_event(e));
            let _ = send(&control, &FromHost::Network { event }, None);
        });
        sink
    });
    let asker = approvals.then(|| {
        let control = Arc::clone(&control);
        let to_owner: SendToOwner = Arc::new(move |msg| send(&control, msg, None));
        OwnerApprover::asker(to_owner)
    });
    let pending = asker.as_ref().map(|a| Arc::clone(&a.pending));
    let request = StartRequest {
        policy,
        template,
        audit,
        on_event,
        restore,
        asker,
        sentinel,
    };
    let started = match start(request) {
        Ok(s) => s,
        Err(message) => {
            refuse(&control, message);
            return 1;
        }
    };
    let StartedBox {
        mut held,
        agent,
        receipt,
        env,
        cwd,
        capabilities,
    } = started;
    let msg = FromHost::Started {
        receipt,
        env,
        cwd,
        capabilities,
    };
    if send(&control, &msg, Some(agent.as_raw_fd())).is_err() {
        held.close();
        return 1;
    }
    drop(agent);
    // An idle box's host keeps what starting it left free in its heap otherwise: give it back.
    airlock_jail::heap::trim();
    serve(&control, held.as_mut(), pending.as_deref(), &mut buf);
    held.close();
    0
}

/// Answers requests until told to kill the box, the box ends, or the owner goes away.
/// `pending`: the queue the owner answers held connections through, if it does.
fn serve(
    control: &OwnedFd,
    held: &mut dyn HeldBox,
    pending: Option<&PendingQueue>,
    buf: &mut [u8],
) {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: control.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: held.end_fd(),
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
            let reason = held.end_reason();
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
                drop(fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
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
                usage: held.usage(),
            },
            Ok(ToHost::Egress { egress }) => answer(held.set_egress(&egress)),
            Ok(ToHost::Pause {}) => answer(held.pause()),
            Ok(ToHost::Resume {}) => answer(held.resume()),
            Ok(ToHost::Park {}) => answer(held.park()),
            Ok(ToHost::Unpark {}) => answer(held.unpark()),
            Ok(ToHost::Checkpoint { dir, then_stop }) => match held.checkpoint(&dir, then_stop) {
                Ok(checkpoint) => FromHost::Checkpointed { checkpoint },
                Err(message) => FromHost::Error { message },
            },
            Ok(ToHost::Approval { id, answer, by }) => approval_reply(pending, id, answer, &by),
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

/// The reply to the owner's answer to held connection `id`.
fn approval_reply(
    pending: Option<&PendingQueue>,
    id: u64,
    answer: airlock_policy::ApprovalAnswer,
    by: &str,
) -> FromHost {
    let Some(pending) = pending else {
        return FromHost::Error {
            message: "this box does not ask its owner about held connections (its approval policy is never, or an approver program answers)".into(),
        };
    };
    match answer_from_owner(pending, id, answer, by) {
        Ok(()) => FromHost::Ok {},
        Err(e @ ApprovalError::NotPending { .. }) => FromHost::NotPending {
            message: e.to_string(),
        },
        Err(e) => FromHost::Error {
            message: e.to_string(),
        },
    }
}
