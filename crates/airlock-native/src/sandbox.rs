//! A long-lived box: its init is airlock's agent, and commands and file operations run inside it
//! over the agent protocol, turn after turn — files written in one call are there in the next.
//!
//! Like a one-shot run, a `Sandbox` must be created from a single-threaded process (the box's
//! setup runs between clone and exec); the server will start each sandbox from its own process.

use crate::launch::{Launch, Started};
use crate::placeholders::{self, Placeholder};
use crate::plan::{proxy_env, PlanError};
use crate::sentinel::Sentinel;
use crate::RunError;
use airlock_runtime::AgentChannel;
use airlock_runtime::Receipt;
use airlock_runtime::{AgentClient, AgentError, SandboxError};
// The agent's children are restricted already: init restricted itself before serving.
use airlock_jail::spawn::{BoxMain, StdioFds};
use airlock_jail::StatusRecord;
use airlock_policy::{NetworkMode, ResolvedPolicy};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the agent may take to greet after the box starts.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long closing waits for the box to end before killing it.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Options of a sandbox.
#[derive(Clone, Default)]
pub struct SandboxOptions {
    /// A JSON-lines file for the proxy's network decisions (proxied boxes).
    pub audit: Option<PathBuf>,
    /// Told about every network decision as it happens (proxied boxes).
    pub on_event: Option<airlock_proxy::audit::EventSink>,
    /// Who is asked about held connections when the policy names no approver program (the
    /// owner, over the host process's control socket).
    pub asker: Option<airlock_proxy::approval::Asker>,
    /// A connection to the program's shared cleanup sentinel (a box under a server): the box
    /// joins it instead of forking a sentinel of its own, unless it has placeholders to hand
    /// over (their descriptors would be held there, one server-wide descriptor budget).
    pub sentinel: Option<std::sync::Arc<OwnedFd>>,
}

/// A running sandbox. Dropping it ends the box and cleans up everything it made.
pub struct Sandbox {
    session: Option<AgentChannel>,
    started: Option<Started>,
    sentinel: Option<Sentinel>,
    placeholders: Vec<Placeholder>,
    env: BTreeMap<String, String>,
    cwd: String,
    /// The agent connection was handed over: closing cannot wait for the agent to notice.
    given_away: bool,
}

impl Sandbox {
    /// Starts a box under `policy` with the agent as its init, and connects to it.
    pub fn create(policy: &ResolvedPolicy, opts: &SandboxOptions) -> Result<Sandbox, SandboxError> {
        let (made, extra_covers) = placeholders::create(policy).map_err(RunError::Placeholders)?;
        let shared = opts
            .sentinel
            .as_ref()
            .filter(|_| made.is_empty())
            .and_then(|fd| fd.try_clone().ok());
        let sentinel = match Sentinel::for_box(shared) {
            Ok(s) => s,
            Err(e) => {
                placeholders::remove(&made);
                return Err(RunError::Sentinel(e).into());
            }
        };
        sentinel.register_placeholders(&made);
        let mut env: BTreeMap<String, String> = policy.env.iter().cloned().collect();
        if policy.network == NetworkMode::Proxy {
            for (k, v) in proxy_env() {
                env.entry(k).or_insert(v);
            }
        }
        let mut sandbox = Sandbox {
            session: None,
            started: None,
            sentinel: Some(sentinel),
            placeholders: made,
            env,
            cwd: policy.cwd.to_string_lossy().into_owned(),
            given_away: false,
        };
        sandbox.start(policy, opts, &extra_covers)?;
        Ok(sandbox)
    }

    fn start(
        &mut self,
        policy: &ResolvedPolicy,
        opts: &SandboxOptions,
        extra_covers: &[PathBuf],
    ) -> Result<(), SandboxError> {
        let (host, boxed) = UnixStream::pair()?;
        let box_fd = boxed.as_raw_fd();
        let main = BoxMain::Serve {
            keep_fd: box_fd,
            root: true,
            main: Box::new(move |ctx| {
                // SAFETY: in the box's init, box_fd is this process's own copy of the box end,
                // and nothing else owns it there.
                let conn = unsafe { OwnedFd::from_raw_fd(box_fd) };
                let hooks = airlock_agent::standalone::WithRoot {
                    hooks: airlock_agent::standalone::AlreadyConfined,
                    ns: ctx.root,
                };
                match airlock_agent::serve(conn, &hooks) {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("airlock agent: {e}");
                        1
                    }
                }
            }),
        };
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?;
        let stdio = StdioFds {
            stdin: null.as_raw_fd(),
            stdout: null.as_raw_fd(),
            stderr: 2,
            controlling_tty: false,
        };
        let sentinel = self
            .sentinel
            .as_ref()
            .ok_or_else(|| std::io::Error::other("sandbox already closed"))?;
        let argv = ["airlock-agent".to_string()];
        let launch = Launch {
            policy,
            argv: &argv,
            audit: opts.audit.as_deref(),
            on_event: opts.on_event.clone(),
            asker: opts.asker.clone(),
            sentinel,
            extra_covers,
            pausable: true,
        };
        let started = launch.start(main, stdio, || {})?;
        drop(boxed);
        drop(null);
        let status_fd = started.spawned.status_fd;
        self.started = Some(started);
        match AgentClient::connect(host, HELLO_TIMEOUT) {
            Ok(client) => {
                self.session = Some(AgentChannel::new(
                    client,
                    self.env.clone(),
                    self.cwd.clone(),
                ));
                Ok(())
            }
            Err(e) => Err(setup_error(status_fd).unwrap_or(SandboxError::Agent(e))),
        }
    }

    /// The session with the box's agent (exec, files).
    pub fn channel(&mut self) -> Result<&mut AgentChannel, SandboxError> {
        self.session
            .as_mut()
            .ok_or(SandboxError::Agent(AgentError::Closed))
    }

    /// Gives the agent connection away (e.g. to another process), keeping the box: the box
    /// lives until `close`, and the new owner speaks to its agent.
    pub fn take_channel(&mut self) -> Option<AgentChannel> {
        self.given_away = true;
        self.session.take()
    }

    /// The box's init, as a pollable pidfd (readable when the box has ended).
    pub fn init_pidfd(&self) -> Option<libc::c_int> {
        self.started.as_ref().map(|s| s.spawned.pidfd)
    }

    /// Replaces a proxied box's egress allowlist for the connections that follow.
    pub fn set_egress(&self, egress: &airlock_policy::Egress) -> Result<(), SandboxError> {
        let Some(proxy) = self.started.as_ref().and_then(|s| s.proxy.as_ref()) else {
            return Err(SandboxError::Setup {
                stage: "network".into(),
                message: "the network policy can only change for a box started with --net proxy"
                    .into(),
            });
        };
        let rules = airlock_proxy::rules::EgressRules::from_egress(egress).map_err(|e| {
            SandboxError::Setup {
                stage: "network".into(),
                message: format!("invalid network policy: {e}"),
            }
        })?;
        proxy.set_rules(rules);
        Ok(())
    }

    /// Writes a whole file inside the box.
    pub fn write_file(&mut self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        self.channel()?.write_file(path, data)
    }

    /// Reads a whole file from inside the box.
    pub fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        self.channel()?.read_file(path)
    }

    /// What the box uses now (from its cgroup and its processes).
    pub fn usage(&self) -> airlock_runtime::backend::Usage {
        let cg = self.started.as_ref().and_then(|s| s.cgroup.as_ref());
        airlock_runtime::backend::Usage {
            cpu_usec: cg.and_then(|c| c.cpu_usage_usec()),
            memory_bytes: cg.and_then(|c| c.current_memory()),
            memory_peak_bytes: cg.and_then(|c| c.peak_memory()),
            disk_bytes: None,
            processes: cg.map(|c| c.member_pids().len() as u64),
        }
    }

    fn cgroup(&self) -> Result<&airlock_jail::cgroup::BoxCgroup, String> {
        self.started
            .as_ref()
            .and_then(|s| s.cgroup.as_ref())
            .ok_or_else(|| {
                "the box has no cgroup (it was started without limits), so nothing can freeze it"
                    .to_string()
            })
    }

    /// Whether the box can be frozen in place, and if not, why.
    pub fn can_freeze(&self) -> Result<(), String> {
        self.cgroup()?.can_freeze()
    }

    /// Freezes every process of the box (the cgroup freezer): CPU given back at once, memory
    /// left resident. Returns once all are frozen.
    pub fn freeze(&self) -> Result<(), String> {
        self.cgroup()?.freeze().map_err(|e| e.to_string())
    }

    /// Continues a frozen box.
    pub fn thaw(&self) -> Result<(), String> {
        self.cgroup()?.thaw().map_err(|e| e.to_string())
    }

    /// What the box enforces.
    pub fn receipt(&self) -> Option<&Receipt> {
        self.started.as_ref().map(|s| &s.receipt)
    }

    /// Ends the box: the agent stops every process, the box's namespaces go away, and the cgroup,
    /// placeholders and proxy are cleaned up.
    pub fn close(mut self) {
        self.shutdown();
    }

    pub(crate) fn shutdown(&mut self) {
        // Closing the connection makes the agent kill its processes and return.
        self.session = None;
        if let Some(started) = self.started.take() {
            // A paused box is frozen: its init could neither see the closed connection nor act on
            // SIGKILL, and the reap below would wait for it for ever, leaving the cgroups behind.
            if let Some(cg) = &started.cgroup {
                let _ = cg.thaw();
            }
            let deadline = if self.given_away {
                Instant::now()
            } else {
                Instant::now() + CLOSE_GRACE
            };
            // Watched through its pidfd, so its end is seen the moment it comes (a 2 ms polling
            // sleep here added up to a tick to every close that waited for the agent to stop).
            if started.spawned.reap_by(deadline).is_none() {
                started.spawned.kill();
                started.spawned.reap();
            }
            if let Some(p) = started.proxy {
                p.stop();
            }
            if let Some(mut cg) = started.cgroup {
                // Kills what is left (nothing, once the init is reaped), then removes.
                let _ = cg.destroy();
            }
            for fd in [
                started.spawned.pidfd,
                started.spawned.status_fd,
                started.spawned.go_fd,
            ] {
                // SAFETY: closing descriptors owned by the spawned box handle, no longer used.
                unsafe { libc::close(fd) };
            }
        }
        placeholders::remove(&self.placeholders);
        self.placeholders.clear();
        if let Some(s) = self.sentinel.take() {
            s.finish();
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The setup error the box's init reported, if any (non-blocking read of its status channel).
fn setup_error(status_fd: libc::c_int) -> Option<SandboxError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pfd = libc::pollfd {
        fd: status_fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a short wait for init to have written its error.
    if unsafe { libc::poll(&mut pfd, 1, 1000) } != 1 {
        return None;
    }
    // SAFETY: reading into our buffer.
    let n = unsafe { libc::read(status_fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return None;
    }
    let text = String::from_utf8_lossy(&buf[..n as usize]).into_owned();
    StatusRecord::parse_all(&text)
        .into_iter()
        .find_map(|r| match r {
            StatusRecord::Error { stage, message, .. } => {
                Some(SandboxError::Setup { stage, message })
            }
            StatusRecord::Exit { .. } => None,
        })
}

impl From<PlanError> for SandboxError {
    fn from(e: PlanError) -> SandboxError {
        SandboxError::from(RunError::Plan(e))
    }
}

impl From<RunError> for SandboxError {
    fn from(e: RunError) -> SandboxError {
        SandboxError::Run(Box::new(e))
    }
}
