//! A native box held by its own `airlock sandbox-host` process, so it can be created and used
//! from any thread of any program (the server). The owner talks to the box's agent directly
//! over the stream the host hands back; the host process holds the box and cleans up after it.

use crate::sandbox_host::{FromHost, ToHost, MAX_CONTROL};
use crate::spawned_host::SpawnedHost;
use airlock_policy::{BackendKind, Egress, NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::{
    ApprovalAnswerer, ApprovalSink, BackendError, BoxEnd, BoxInstance, Capabilities, Checkpoint,
    CheckpointOptions, CommandDefaults, NetworkSink, StartOptions, Template, Usage,
};
use airlock_runtime::Receipt;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long starting a sandbox may take before it is given up.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request to the host may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a checkpoint may take (it writes the box's memory and copies its writable files).
const CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a kill waits for the host to clean up before killing it.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// Which host process holds a box: the subcommand of the airlock binary that serves the
/// control protocol ([`ToHost`]/[`FromHost`]) and the kind of box it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostProcess {
    /// `airlock <subcommand> <args…>` (`sandbox-host` for native boxes).
    pub subcommand: &'static str,
    /// A program of its own to run instead, as `<program> <args…>` (the native box's
    /// [`crate::box_host::PROGRAM`], where it is from airlock's build).
    pub program: Option<PathBuf>,
    pub args: Vec<std::ffi::OsString>,
    pub kind: BackendKind,
    /// Start the box from the checkpoint in this directory (backends that can).
    pub restore: Option<PathBuf>,
}

impl HostProcess {
    /// The native box's host process: `airlock sandbox-host`.
    pub fn native() -> HostProcess {
        HostProcess {
            subcommand: "sandbox-host",
            program: None,
            args: Vec::new(),
            kind: BackendKind::Native,
            restore: None,
        }
    }
}

/// A box and the host process that holds it.
pub(crate) struct HostedBox {
    host: HostProcess,
    capabilities: Capabilities,
    child: Option<SpawnedHost>,
    control: Arc<OwnedFd>,
    requests: Arc<Requests>,
    ended: Arc<Mutex<Option<BoxEnd>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    receipt: Receipt,
    defaults: CommandDefaults,
    agent: Option<UnixStream>,
    proxied: bool,
    /// The box's hold on the program's shared cleanup sentinel (native boxes), given back
    /// after the host has ended (fields drop after [`Drop::drop`]).
    _sentinel_lease: Option<crate::sentinel_service::Lease>,
}

/// The owner's requests to the host and their replies, one exchange at a time: shared by the
/// box and its [`ApprovalAnswerer`] (which answers while the box is busy elsewhere).
struct Requests {
    control: Arc<OwnedFd>,
    replies: Mutex<Receiver<FromHost>>,
    ended: Arc<Mutex<Option<BoxEnd>>>,
}

impl Requests {
    fn ended(&self) -> Option<BoxEnd> {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends `msg` and waits up to `timeout` for the host's reply.
    fn request_within(&self, msg: &ToHost, timeout: Duration) -> Result<FromHost, BackendError> {
        if let Some(end) = self.ended() {
            return Err(BackendError::Ended(end.reason));
        }
        let replies = self.replies.lock().unwrap_or_else(PoisonError::into_inner);
        // Replies to earlier requests that timed out are stale.
        while replies.try_recv().is_ok() {}
        send(&self.control, msg)?;
        match replies.recv_timeout(timeout) {
            Ok(reply) => Ok(reply),
            Err(RecvTimeoutError::Timeout) => Err(host_err("the sandbox host did not answer")),
            Err(RecvTimeoutError::Disconnected) => Err(BackendError::Ended(
                self.ended()
                    .map_or_else(|| "the sandbox host ended".into(), |e| e.reason),
            )),
        }
    }

    /// Answers held connection `id` (see [`BoxInstance::answer_approval`]).
    fn answer_approval(
        &self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        let msg = ToHost::Approval {
            id,
            answer: answer.clone(),
            by: by.to_string(),
        };
        match self.request_within(&msg, REQUEST_TIMEOUT)? {
            FromHost::Ok {} => Ok(()),
            FromHost::NotPending { message } => Err(BackendError::NotPending(message)),
            FromHost::Error { message } => Err(BackendError::Invalid(message)),
            other => Err(host_err(format!("unexpected reply to approval: {other:?}"))),
        }
    }
}

impl ApprovalAnswerer for Requests {
    fn answer(
        &self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        self.answer_approval(id, answer, by)
    }
}

fn host_err(msg: impl Into<String>) -> BackendError {
    BackendError::Host(msg.into())
}

fn send(control: &OwnedFd, msg: &ToHost) -> Result<(), BackendError> {
    send_with(control, msg, None)
}

fn send_with(control: &OwnedFd, msg: &ToHost, fd: Option<libc::c_int>) -> Result<(), BackendError> {
    let bytes = serde_json::to_vec(msg).map_err(|e| host_err(e.to_string()))?;
    airlock_jail::net::send_with_fd(control.as_raw_fd(), &bytes, fd)
        .map_err(|e| host_err(format!("cannot reach the sandbox host: {e}")))
}

/// Reads one message (and a descriptor) from the host, waiting at most `timeout`.
fn recv(
    control: &OwnedFd,
    timeout: Option<Duration>,
) -> Result<Option<(FromHost, Option<OwnedFd>)>, BackendError> {
    let mut pfd = libc::pollfd {
        fd: control.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut pfd, 1, ms) } {
        1 => {}
        0 => return Err(host_err("the sandbox host did not answer in time")),
        _ => return Err(host_err(std::io::Error::last_os_error().to_string())),
    }
    let mut buf = vec![0u8; MAX_CONTROL];
    let (n, fd) = airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf)
        .map_err(|e| host_err(e.to_string()))?;
    // SAFETY: a descriptor just received over SCM_RIGHTS is ours alone.
    let fd = fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    if n == 0 {
        return Ok(None);
    }
    let msg = serde_json::from_slice(&buf[..n])
        .map_err(|e| host_err(format!("bad message from the sandbox host: {e}")))?;
    Ok(Some((msg, fd)))
}

/// Routes what the host sends after the start: replies to the requester, network events to the
/// sink, held connections to the approval sink, the box's end to `ended`.
fn read_host(
    control: Arc<OwnedFd>,
    replies: Sender<FromHost>,
    ended: Arc<Mutex<Option<BoxEnd>>>,
    sink: Option<Arc<dyn NetworkSink>>,
    approvals: Option<Arc<dyn ApprovalSink>>,
) {
    let end = |reason: String| {
        let mut e = ended.lock().unwrap_or_else(PoisonError::into_inner);
        e.get_or_insert(BoxEnd { reason });
    };
    loop {
        match recv(&control, None) {
            Ok(Some((FromHost::Network { event }, _))) => {
                if let Some(s) = &sink {
                    s.network_event(*event);
                }
            }
            Ok(Some((FromHost::ApprovalRequested { request }, _))) => {
                if let Some(a) = &approvals {
                    a.requested(*request);
                }
            }
            Ok(Some((FromHost::ApprovalWithdrawn { id }, _))) => {
                if let Some(a) = &approvals {
                    a.withdrawn(id);
                }
            }
            Ok(Some((FromHost::Exited { reason }, _))) => end(reason),
            Ok(Some((reply, _))) => {
                let _ = replies.send(reply);
            }
            Ok(None) => {
                end("the sandbox host ended".into());
                return;
            }
            Err(e) => {
                end(format!("the sandbox host failed: {e}"));
                return;
            }
        }
    }
}

impl HostedBox {
    /// Starts `airlock_exe <host.subcommand>`, which creates the box under `policy` from
    /// `template`. Blocking.
    pub(crate) fn start(
        airlock_exe: &Path,
        host: HostProcess,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<HostedBox, BackendError> {
        let (ours, theirs) =
            airlock_jail::net::seqpacket_pair().map_err(|e| host_err(e.to_string()))?;
        let (exe, mut args): (&Path, Vec<&std::ffi::OsStr>) = match &host.program {
            Some(program) => (program, Vec::new()),
            None => (airlock_exe, vec![std::ffi::OsStr::new(host.subcommand)]),
        };
        args.extend(host.args.iter().map(|a| a.as_os_str()));
        // A native box's host program is cloned from the program's zygote where it can be
        // (its relocated pages shared by every box), else exec'd.
        let forked =
            if host.kind == BackendKind::Native && host.program.is_some() && args.is_empty() {
                crate::host_zygote::fork_host(exe, theirs.as_fd()).map_err(BackendError::Start)?
            } else {
                None
            };
        let mut child = match forked {
            Some(child) => child,
            None => SpawnedHost::spawn(exe, &args, theirs.as_fd()).map_err(|e| {
                let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
                BackendError::Start(format!(
                    "cannot run {} {}: {e}",
                    exe.display(),
                    shown.join(" ")
                ))
            })?,
        };
        drop(theirs);
        let fail = |child: &mut SpawnedHost, e: BackendError| {
            child.kill();
            child.wait();
            e
        };
        let control = Arc::new(ours);
        let start = ToHost::Start {
            policy: Box::new(policy.clone()),
            template: Box::new(template.clone()),
            audit: opts.audit_file.clone(),
            network_events: opts.network_events.is_some(),
            secret_values: airlock_policy::SecretValues::of(policy),
            restore: host.restore.clone(),
            approvals: opts.approvals.is_some(),
        };
        // A native box's host joins the program's shared cleanup sentinel over a connection
        // that comes with its start message.
        let (sentinel, sentinel_lease) = match (host.kind == BackendKind::Native)
            .then(|| crate::sentinel_service::connection(exe, &args))
            .flatten()
        {
            Some((conn, lease)) => (Some(conn), Some(lease)),
            None => (None, None),
        };
        if let Err(e) = send_with(&control, &start, sentinel.as_ref().map(AsRawFd::as_raw_fd)) {
            return Err(fail(&mut child, e));
        }
        drop(sentinel);
        let proxied = policy.network == NetworkMode::Proxy;
        let (receipt, defaults, agent, capabilities) = match recv(&control, Some(START_TIMEOUT)) {
            Ok(Some((
                FromHost::Started {
                    receipt,
                    env,
                    cwd,
                    capabilities,
                },
                Some(fd),
            ))) => (
                receipt,
                CommandDefaults { env, cwd },
                UnixStream::from(fd),
                capabilities.unwrap_or(Capabilities {
                    live_egress: proxied,
                    pause: false,
                    checkpoint: None,
                    park: false,
                }),
            ),
            Ok(Some((FromHost::Error { message }, _))) => {
                return Err(fail(&mut child, BackendError::Start(message)))
            }
            Ok(Some((other, _))) => {
                return Err(fail(
                    &mut child,
                    host_err(format!("unexpected reply to start: {other:?}")),
                ))
            }
            Ok(None) => {
                return Err(fail(
                    &mut child,
                    BackendError::Start("the sandbox host ended before the box started".into()),
                ))
            }
            Err(e) => return Err(fail(&mut child, e)),
        };
        let (tx, replies) = channel();
        let ended = Arc::new(Mutex::new(None));
        let reader = {
            let (control, ended, sink, approvals) = (
                Arc::clone(&control),
                Arc::clone(&ended),
                opts.network_events.clone(),
                opts.approvals.clone(),
            );
            std::thread::Builder::new()
                .name("sandbox-host-reader".into())
                .spawn(move || read_host(control, tx, ended, sink, approvals))
        };
        let reader = match reader {
            Ok(r) => r,
            Err(e) => return Err(fail(&mut child, host_err(e.to_string()))),
        };
        Ok(HostedBox {
            host,
            capabilities,
            child: Some(child),
            requests: Arc::new(Requests {
                control: Arc::clone(&control),
                replies: Mutex::new(replies),
                ended: Arc::clone(&ended),
            }),
            control,
            ended,
            reader: Some(reader),
            receipt,
            defaults,
            agent: Some(agent),
            proxied,
            _sentinel_lease: sentinel_lease,
        })
    }

    /// Sends `msg` and waits for the host's reply.
    fn request(&mut self, msg: &ToHost) -> Result<FromHost, BackendError> {
        self.request_within(msg, REQUEST_TIMEOUT)
    }

    /// Sends `msg` and waits up to `timeout` for the host's reply.
    fn request_within(
        &mut self,
        msg: &ToHost,
        timeout: Duration,
    ) -> Result<FromHost, BackendError> {
        self.requests.request_within(msg, timeout)
    }

    fn shutdown(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Watched through a pidfd, so its end is seen the moment it comes (a 2 ms polling sleep
        // here was a millisecond of every sandbox's delete, on average); polled without one.
        // SAFETY: pidfd_open on our own, not yet reaped child; a new descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
        let _ = send(&self.control, &ToHost::Kill {});
        let deadline = Instant::now() + KILL_GRACE;
        loop {
            match child.try_wait() {
                Ok(true) | Err(_) => break,
                Ok(false) if Instant::now() >= deadline => {
                    child.kill();
                    child.wait();
                    break;
                }
                Ok(false) if pidfd >= 0 => {
                    // The pidfd is open until closed below.
                    airlock_jail::sys::wait_readable(&[pidfd as libc::c_int], deadline);
                }
                Ok(false) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        if pidfd >= 0 {
            // SAFETY: the descriptor pidfd_open gave, closed once.
            unsafe { libc::close(pidfd as libc::c_int) };
        }
        // The host is gone, so its end of the control socket is closed: the reader sees the end.
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl HostedBox {
    fn simple_request(&mut self, msg: &ToHost, what: &'static str) -> Result<(), BackendError> {
        if !self.capabilities.pause {
            return Err(BackendError::Unsupported {
                kind: self.host.kind,
                what,
                why: format!("this backend has no {what} yet"),
            });
        }
        match self.request(msg)? {
            FromHost::Ok {} => Ok(()),
            FromHost::Error { message } => Err(BackendError::Unsupported {
                kind: self.host.kind,
                what,
                why: message,
            }),
            other => Err(host_err(format!("unexpected reply to {what}: {other:?}"))),
        }
    }

    /// Parks or unparks the box through its host; a box that needs no parking is not asked
    /// (a round trip to the host is most of a pooled native claim).
    fn park_request(&mut self, msg: &ToHost, what: &'static str) -> Result<(), BackendError> {
        if !self.capabilities.park {
            return Ok(());
        }
        match self.request(msg)? {
            FromHost::Ok {} => Ok(()),
            FromHost::Error { message } => {
                Err(host_err(format!("cannot {what} the box: {message}")))
            }
            other => Err(host_err(format!("unexpected reply to {what}: {other:?}"))),
        }
    }
}

impl BoxInstance for HostedBox {
    fn kind(&self) -> BackendKind {
        self.host.kind
    }

    fn receipt(&self) -> &Receipt {
        &self.receipt
    }

    fn command_defaults(&self) -> CommandDefaults {
        self.defaults.clone()
    }

    fn take_agent_stream(&mut self) -> Option<UnixStream> {
        self.agent.take()
    }

    fn ended(&self) -> Option<BoxEnd> {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn usage(&mut self) -> Result<Usage, BackendError> {
        match self.request(&ToHost::Usage {})? {
            FromHost::Usage { usage } => Ok(usage),
            FromHost::Error { message } => Err(host_err(message)),
            other => Err(host_err(format!("unexpected reply to usage: {other:?}"))),
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn pause(&mut self) -> Result<(), BackendError> {
        self.simple_request(&ToHost::Pause {}, "pause")
    }

    fn resume(&mut self) -> Result<(), BackendError> {
        self.simple_request(&ToHost::Resume {}, "resume")
    }

    fn park(&mut self) -> Result<(), BackendError> {
        self.park_request(&ToHost::Park {}, "park")
    }

    fn unpark(&mut self) -> Result<(), BackendError> {
        self.park_request(&ToHost::Unpark {}, "unpark")
    }

    fn set_egress(&mut self, egress: &Egress) -> Result<(), BackendError> {
        if !self.proxied {
            return Err(BackendError::Unsupported {
                kind: self.host.kind,
                what: "change its network policy",
                why: "only a box started with --net proxy has an allowlist to change".into(),
            });
        }
        let msg = ToHost::Egress {
            egress: Box::new(egress.clone()),
        };
        match self.request(&msg)? {
            FromHost::Ok {} => Ok(()),
            FromHost::Error { message } => Err(BackendError::Invalid(message)),
            other => Err(host_err(format!("unexpected reply to egress: {other:?}"))),
        }
    }

    fn answer_approval(
        &mut self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        self.requests.answer_approval(id, answer, by)
    }

    fn approval_answerer(&self) -> Option<Arc<dyn ApprovalAnswerer>> {
        Some(Arc::clone(&self.requests) as Arc<dyn ApprovalAnswerer>)
    }

    fn flush_network_events(&mut self) -> Result<(), BackendError> {
        // The host sends events and replies on one socket, in order, and the reader hands them
        // on in that order: once the reply is here, every earlier event is in the sink.
        match self.request(&ToHost::Sync {})? {
            FromHost::Ok {} => Ok(()),
            other => Err(host_err(format!("unexpected reply to sync: {other:?}"))),
        }
    }

    fn checkpoint(
        &mut self,
        dir: &Path,
        opts: &CheckpointOptions,
    ) -> Result<Checkpoint, BackendError> {
        // Asked of the host even when the capabilities say no: its refusal says why.
        let what = "take a checkpoint";
        let msg = ToHost::Checkpoint {
            dir: dir.to_path_buf(),
            then_stop: opts.then_stop,
        };
        match self.request_within(&msg, CHECKPOINT_TIMEOUT)? {
            FromHost::Checkpointed { checkpoint } => Ok(checkpoint),
            FromHost::Error { message } => Err(BackendError::Unsupported {
                kind: self.host.kind,
                what,
                why: message,
            }),
            other => Err(host_err(format!(
                "unexpected reply to checkpoint: {other:?}"
            ))),
        }
    }

    fn kill(mut self: Box<Self>) {
        self.shutdown();
    }
}

impl Drop for HostedBox {
    fn drop(&mut self) {
        self.shutdown();
    }
}
