//! A sandbox whose supervisor is its own `airlock sandbox-host` process, so it can be created and
//! used from any thread of any program (the server). The caller talks to the box's agent
//! directly; the host process holds the box and cleans up after it.

use crate::agent_client::{AgentClient, AgentError};
use crate::mux::AgentMux;
use crate::sandbox::{SandboxError, SandboxOptions};
use crate::sandbox_host::{FromHost, ToHost, MAX_CONTROL};
use crate::session::{AgentSession, ExecOutput};
use airlock_policy::ResolvedPolicy;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long starting a sandbox may take before it is given up.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A sandbox held by its own supervisor process.
pub struct RemoteSandbox {
    child: Option<Child>,
    control: OwnedFd,
    /// The agent connection, shared by [`RemoteSandbox::session`] and every
    /// [`RemoteSandbox::new_session`].
    mux: AgentMux,
    /// The box's defaults for new sessions.
    env: std::collections::BTreeMap<String, String>,
    cwd: String,
    session: AgentSession,
    receipt: serde_json::Value,
    init_pid: i32,
}

fn io_err(msg: impl Into<String>) -> SandboxError {
    SandboxError::Io(std::io::Error::other(msg.into()))
}

impl RemoteSandbox {
    /// Starts `airlock_exe sandbox-host`, which creates the box under `policy`.
    pub fn start(
        airlock_exe: &Path,
        policy: &ResolvedPolicy,
        opts: &SandboxOptions,
    ) -> Result<RemoteSandbox, SandboxError> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array for socketpair to fill.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } == -1
        {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: two fresh descriptors, owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let child_fd = theirs.as_raw_fd();
        let mut cmd = Command::new(airlock_exe);
        cmd.arg("sandbox-host")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // SAFETY: runs in the forked child before exec; dup2 is async-signal-safe and leaves the
        // control socket at descriptor 3 without close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(child_fd, 3) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if child_fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0);
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(theirs);
        let mut remote_child = Some(child);
        let fail = |child: &mut Option<Child>, e: SandboxError| {
            if let Some(mut c) = child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            e
        };
        let start = ToHost::Start {
            policy: Box::new(policy.clone()),
            audit: opts.audit.clone(),
        };
        let bytes = serde_json::to_vec(&start).map_err(|e| io_err(e.to_string()))?;
        if let Err(e) = airlock_jail::net::send_with_fd(ours.as_raw_fd(), &bytes, None) {
            return Err(fail(&mut remote_child, e.into()));
        }
        let (msg, fd) = match recv(&ours, Some(START_TIMEOUT)) {
            Ok(v) => v,
            Err(e) => return Err(fail(&mut remote_child, e)),
        };
        match (msg, fd) {
            (
                FromHost::Started {
                    init_pid,
                    receipt,
                    env,
                    cwd,
                },
                Some(fd),
            ) => {
                // SAFETY: fd is the agent connection we just received, owned from here on.
                let stream = unsafe { UnixStream::from_raw_fd(fd) };
                let mux = match AgentMux::new(stream) {
                    Ok(m) => m,
                    Err(e) => return Err(fail(&mut remote_child, e.into())),
                };
                let session =
                    AgentSession::new(AgentClient::over(mux.port()), env.clone(), cwd.clone());
                Ok(RemoteSandbox {
                    child: remote_child,
                    control: ours,
                    mux,
                    env,
                    cwd,
                    session,
                    receipt,
                    init_pid,
                })
            }
            (FromHost::Error { message }, _) => Err(fail(
                &mut remote_child,
                SandboxError::Setup {
                    stage: "sandbox".into(),
                    message,
                },
            )),
            (other, _) => Err(fail(
                &mut remote_child,
                io_err(format!("unexpected reply from the sandbox host: {other:?}")),
            )),
        }
    }

    /// What the box enforces.
    pub fn receipt(&self) -> &serde_json::Value {
        &self.receipt
    }

    /// The box's init pid (host view).
    pub fn init_pid(&self) -> i32 {
        self.init_pid
    }

    /// The box's main session (the one its code interpreter contexts live on).
    pub fn session(&mut self) -> &mut AgentSession {
        &mut self.session
    }

    /// A new session on the box, independent of every other: usable from another thread while
    /// the main session (or other sessions) are busy. What it starts and reads is its own; a
    /// process it started runs on after it is dropped (its output is detached).
    pub fn new_session(&self) -> AgentSession {
        AgentSession::new(
            AgentClient::over(self.mux.port()),
            self.env.clone(),
            self.cwd.clone(),
        )
    }

    /// Runs a command to its end (see [`AgentSession::exec`]).
    pub fn exec(
        &mut self,
        argv: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
        output_cap: usize,
    ) -> Result<ExecOutput, SandboxError> {
        self.session.exec(argv, env, stdin, timeout, output_cap)
    }

    /// Replaces a proxied box's egress allowlist.
    pub fn set_network(
        &mut self,
        allow_domain: &[String],
        deny_domain: &[String],
        allow_ip: &[String],
        map_host: &[String],
    ) -> Result<(), SandboxError> {
        let msg = ToHost::Network {
            allow_domain: allow_domain.to_vec(),
            deny_domain: deny_domain.to_vec(),
            allow_ip: allow_ip.to_vec(),
            map_host: map_host.to_vec(),
        };
        let bytes = serde_json::to_vec(&msg).map_err(|e| io_err(e.to_string()))?;
        airlock_jail::net::send_with_fd(self.control.as_raw_fd(), &bytes, None)?;
        match recv(&self.control, Some(Duration::from_secs(10)))?.0 {
            FromHost::Ok {} => Ok(()),
            FromHost::Error { message } => Err(SandboxError::Setup {
                stage: "network".into(),
                message,
            }),
            FromHost::Exited { .. } => Err(SandboxError::Agent(AgentError::Closed)),
            other => Err(io_err(format!(
                "unexpected reply from the sandbox host: {other:?}"
            ))),
        }
    }

    /// Ends the box and waits (bounded) for its supervisor to clean up.
    pub fn kill(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(bytes) = serde_json::to_vec(&ToHost::Kill {}) {
            let _ = airlock_jail::net::send_with_fd(self.control.as_raw_fd(), &bytes, None);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

impl Drop for RemoteSandbox {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn recv(
    control: &OwnedFd,
    timeout: Option<Duration>,
) -> Result<(FromHost, Option<libc::c_int>), SandboxError> {
    let mut pfd = libc::pollfd {
        fd: control.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut pfd, 1, ms) } {
        1 => {}
        0 => return Err(io_err("the sandbox host did not answer in time")),
        _ => return Err(std::io::Error::last_os_error().into()),
    }
    let mut buf = vec![0u8; MAX_CONTROL];
    let (n, fd) = airlock_jail::net::recv_with_fd(control.as_raw_fd(), &mut buf)?;
    if n == 0 {
        return Err(SandboxError::Agent(AgentError::Closed));
    }
    let msg = serde_json::from_slice(&buf[..n])
        .map_err(|e| io_err(format!("bad message from the sandbox host: {e}")))?;
    Ok((msg, fd))
}
