//! The supervisor: runs one box to its end. Single-threaded, one poll loop: the box's exit, its
//! status channel, its output, the caller's terminal, forwarded signals and the deadline.

use crate::launch::{Launch, Started};
use crate::placeholders;
use crate::plan::PlanError;
use crate::sandbox_host::network_event;
use crate::sentinel::Sentinel;
use crate::stdio::BoxIo;
use airlock_jail::cgroup::{BoxCgroup, CgroupError};
use airlock_jail::spawn::{BoxMain, SpawnError, SpawnedBox};
use airlock_jail::{write_all, StatusRecord};
use airlock_policy::ResolvedPolicy;
use airlock_runtime::attached::tty::copy_winsize;
use airlock_runtime::attached::{RunOptions, SignalGuard};
use airlock_runtime::{ChangeIssue, ChangesReport, Event, LimitHit, Receipt, RunResult};
use std::io;
use std::time::{Duration, Instant};

/// Why a run could not happen (airlock's failure, exit status 125).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("cannot create the box's cgroup: {0}")]
    Cgroup(#[from] CgroupError),
    #[error("cannot prepare protected paths: {0}")]
    Placeholders(#[source] io::Error),
    #[error("cannot use the template: {0}")]
    Template(String),
    #[error("cannot start the cleanup sentinel: {0}")]
    Sentinel(#[source] io::Error),
    #[error("cannot set up the box's input and output: {0}")]
    Stdio(#[source] io::Error),
    #[error("cannot open the audit file: {0}")]
    Audit(#[source] crate::output_file::OutputFileError),
    #[error(transparent)]
    Secrets(#[from] crate::box_secrets::SecretsSetupError),
    #[error("cannot start the egress proxy: {0}")]
    Proxy(#[source] io::Error),
    #[error(transparent)]
    Approval(#[from] airlock_proxy::approval::ApprovalError),
    #[error("cannot prepare the channel for the workspace's change layer: {0}")]
    ChangesChannel(#[source] io::Error),
    #[error("a long-lived box writes its workspace directly (the host reads it between calls); use changes = \"direct\" (--changes direct) for it")]
    ChangesNeedOneShot,
}

/// Runs `argv` in a box under `policy`, forwarding its output to airlock's stdout and stderr.
pub fn run(
    policy: &ResolvedPolicy,
    argv: &[String],
    opts: &RunOptions,
) -> Result<RunResult, RunError> {
    let start = Instant::now();
    let sentinel = Sentinel::start().map_err(RunError::Sentinel)?;
    let (made, extra_covers) = placeholders::create(policy).map_err(RunError::Placeholders)?;
    sentinel.register_placeholders(&made);
    let result = run_planned(policy, argv, opts, start, &sentinel, &extra_covers);
    placeholders::remove(&made);
    sentinel.finish();
    result
}

fn run_planned(
    policy: &ResolvedPolicy,
    argv: &[String],
    opts: &RunOptions,
    start: Instant,
    sentinel: &Sentinel,
    extra_covers: &[std::path::PathBuf],
) -> Result<RunResult, RunError> {
    let signals = SignalGuard::block().map_err(RunError::Stdio)?;
    let io = BoxIo::new(opts)?;
    let terminal = crate::ask_terminal::terminal_asker(policy, opts)?;
    let launch = Launch {
        policy,
        argv,
        audit: opts.audit.as_deref(),
        on_event: None,
        asker: terminal.as_ref().map(|(_, asker)| asker.clone()),
        sentinel,
        extra_covers,
        pausable: false,
    };
    let main = BoxMain::Command {
        root_at: opts.root_at,
    };
    let started = launch.start(main, io.child_fds(), || io.close_child_side())?;
    let Started {
        spawned,
        mut cgroup,
        proxy,
        changes,
        receipt,
        ..
    } = started;
    let mut sup = Supervision {
        start,
        deadline: policy.limits.timeout.map(|t| start + t),
        output_limit: policy.limits.output,
        events: vec![],
        limits_hit: vec![],
        stdout_bytes: 0,
        stderr_bytes: 0,
        status: Vec::new(),
        killed: false,
        interrupts: 0,
    };
    sup.event("start", format!("pid {}", spawned.pid));
    let wait_status = sup.run_loop(
        &spawned,
        &io,
        &signals,
        cgroup.as_ref(),
        opts.control_fd,
        proxy.as_ref(),
        terminal.as_ref().map(|(t, _)| t.floor()).as_deref(),
    );
    // A question still up is refused and the terminal given back before the box's terminal
    // mode is restored (the order keeps the caller's terminal as it was).
    if let Some((t, _)) = &terminal {
        t.close();
    }
    drop(io);
    drop(signals);
    let (net_events, net_dropped) = proxy.map(|p| p.stop()).unwrap_or_default();
    let mut peak = None;
    if let Some(cg) = cgroup.as_mut() {
        cg.kill_all();
        let ev = cg.events();
        if ev.oom_kills > 0 {
            sup.limits_hit.push(LimitHit::Memory);
            sup.event(
                "memory-limit",
                format!("{} process(es) killed by the memory limit", ev.oom_kills),
            );
        }
        if ev.pids_max_hits > 0 {
            sup.limits_hit.push(LimitHit::Pids);
            sup.event(
                "pids-limit",
                format!(
                    "{} process creation(s) refused by the pids limit",
                    ev.pids_max_hits
                ),
            );
        }
        peak = cg.peak_memory();
        if let Err(e) = cg.destroy() {
            sup.event("cleanup", format!("cgroup not removed: {e}"));
        }
    }
    // SAFETY: closing descriptors owned by the spawned box handle, no longer used.
    unsafe {
        libc::close(spawned.pidfd);
        libc::close(spawned.status_fd);
        libc::close(spawned.go_fd);
    }
    if net_events
        .iter()
        .any(|e| e.reason.as_deref() == Some("byte-budget-exhausted"))
    {
        sup.limits_hit.push(LimitHit::ByteBudget);
        sup.event(
            "byte-budget",
            "the box's network byte budget ran out; connections were cut".into(),
        );
    }
    // The box's init has been reaped, so its pid namespace and every process in it are gone
    // (and the cgroup is empty): nothing can change the layer while it is applied.
    let report = changes.map(|layer| apply_changes(&mut sup, policy, &layer));
    let mut result = sup.finish(wait_status, peak, receipt);
    result.network_events = net_events.iter().map(network_event).collect();
    result.network_events_dropped = net_dropped;
    result.changes = report;
    result.collect_denials();
    Ok(result)
}

/// Applies the workspace's change layer to the host workspace, recording what happened.
fn apply_changes(
    sup: &mut Supervision,
    policy: &ResolvedPolicy,
    layer: &std::os::fd::OwnedFd,
) -> ChangesReport {
    let workspace = match &policy.filesystem {
        airlock_policy::FilesystemPolicy::Isolated {
            workspace: Some(w), ..
        } => w.host.clone(),
        _ => {
            let mut r = ChangesReport::default();
            r.failed.push(ChangeIssue {
                path: ".".into(),
                reason: "the box had a change layer but no workspace to apply it to".into(),
            });
            return r;
        }
    };
    let report = crate::changes::apply(layer, &workspace);
    sup.event(
        "changes",
        format!(
            "applied to {}: {} written ({} bytes), {} deleted, {} skipped, {} failed",
            workspace.display(),
            report.written,
            report.bytes,
            report.deleted,
            report.skipped.len(),
            report.failed.len()
        ),
    );
    report
}

struct Supervision {
    start: Instant,
    deadline: Option<Instant>,
    output_limit: Option<u64>,
    events: Vec<Event>,
    limits_hit: Vec<LimitHit>,
    stdout_bytes: u64,
    stderr_bytes: u64,
    status: Vec<u8>,
    killed: bool,
    interrupts: u32,
}

/// How long output is drained after the box's init has exited (its processes die with it).
const DRAIN: Duration = Duration::from_secs(2);

impl Supervision {
    fn event(&mut self, kind: &'static str, detail: String) {
        self.events.push(Event {
            time_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            kind,
            detail,
        });
    }

    fn kill(&mut self, spawned: &SpawnedBox, cgroup: Option<&BoxCgroup>) {
        if !self.killed {
            self.killed = true;
            spawned.kill();
            if let Some(cg) = cgroup {
                cg.kill_all();
            }
        }
    }

    /// Polls until the box's init has exited and its output and status channel are drained.
    #[allow(clippy::too_many_arguments)]
    fn run_loop(
        &mut self,
        spawned: &SpawnedBox,
        io: &BoxIo,
        signals: &SignalGuard,
        cgroup: Option<&BoxCgroup>,
        control_fd: Option<libc::c_int>,
        proxy: Option<&airlock_proxy::server::ProxyHandle>,
        floor: Option<&airlock_proxy::approval::TerminalFloor>,
    ) -> Option<libc::c_int> {
        let mut control_open = control_fd.is_some();
        let mut control = crate::control::ControlReader::default();
        let master = io.tty.as_ref().map(|t| t.0);
        let mut outs: Vec<(libc::c_int, usize)> = io
            .out
            .iter()
            .enumerate()
            .filter(|(_, fd)| **fd >= 0)
            .map(|(i, fd)| (*fd, i))
            .collect();
        let mut status_open = true;
        let mut stdin_open = master.is_some();
        let mut exited: Option<libc::c_int> = None;
        let mut drain_until: Option<Instant> = None;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if exited.is_some() && outs.is_empty() && !status_open {
                break;
            }
            if let Some(d) = drain_until {
                if Instant::now() >= d {
                    break;
                }
            }
            let now = Instant::now();
            let mut timeout_ms: i32 = -1;
            if let Some(deadline) = self.deadline.filter(|_| !self.killed) {
                if now >= deadline {
                    self.limits_hit.push(LimitHit::Timeout);
                    self.event("timeout", "wall-clock limit reached; box killed".into());
                    self.kill(spawned, cgroup);
                    continue;
                }
                timeout_ms = (deadline - now).as_millis().min(i32::MAX as u128) as i32 + 1;
            }
            if let Some(d) = drain_until {
                let left = d.saturating_duration_since(now).as_millis() as i32 + 1;
                timeout_ms = if timeout_ms < 0 {
                    left
                } else {
                    timeout_ms.min(left)
                };
            }
            // While the terminal approver asks, the terminal is its own: neither airlock's stdin
            // nor the box's output is touched (the box's writes wait in its pty or pipes).
            let asking = floor.is_some_and(|f| f.asking());
            let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(7);
            let mut push = |fd: libc::c_int| {
                pfds.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
            };
            push(if exited.is_none() { spawned.pidfd } else { -1 });
            push(if status_open { spawned.status_fd } else { -1 });
            push(signals.fd);
            push(if stdin_open && !asking { 0 } else { -1 });
            push(if control_open {
                control_fd.unwrap_or(-1)
            } else {
                -1
            });
            push(floor.map_or(-1, |f| f.wake_fd()));
            for (fd, _) in &outs {
                push(if asking { -1 } else { *fd });
            }
            // SAFETY: pfds is a valid array of pollfd of the given length.
            let n =
                unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            let ready = |i: usize| pfds[i].fd >= 0 && pfds[i].revents != 0;
            if ready(5) {
                if let Some(f) = floor {
                    f.drain_wake();
                }
            }
            #[cfg(debug_assertions)]
            if ready(3) {
                test_hooks::relay_delay();
            }
            // The relay's turn for this round; `None`: a question went up since the poll began
            // (what is ready stays unread for the next round).
            let turn = floor.map(|f| f.relay_turn());
            let relaying = !matches!(turn, Some(None));
            if ready(0) {
                exited = spawned.try_reap().or(exited);
                if exited.is_some() {
                    drain_until = Some(Instant::now() + DRAIN);
                }
            }
            if ready(1) {
                // SAFETY: reading into our buffer.
                let r =
                    unsafe { libc::read(spawned.status_fd, buf.as_mut_ptr().cast(), buf.len()) };
                if r > 0 {
                    self.status.extend_from_slice(&buf[..r as usize]);
                } else if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
                {
                    status_open = false;
                }
            }
            if ready(2) {
                while let Some(sig) = signals.read() {
                    if sig == libc::SIGWINCH {
                        if let Some(m) = master {
                            copy_winsize(0, m);
                        }
                        continue;
                    }
                    self.interrupts += 1;
                    self.event("signal", format!("forwarded signal {sig} to the box"));
                    let _ = spawned.signal(sig);
                    if self.interrupts >= 3 {
                        self.event("signal", "third signal: box killed".into());
                        self.kill(spawned, cgroup);
                    }
                }
            }
            // With an approver, the poll's word is re-checked under the turn: a question that
            // was up since the poll may have read the key that made stdin readable, and a
            // blocking read of nothing would stop this loop (and the box's timeout) for good.
            let stdin_ready = ready(3) && relaying && (floor.is_none() || readable_now(0));
            if stdin_ready {
                if let Some(m) = master {
                    // SAFETY: reading airlock's stdin into our buffer.
                    let r = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
                    if r > 0 {
                        let _ = write_all(m, &buf[..r as usize]);
                    } else {
                        stdin_open = false;
                    }
                }
            }
            if ready(4) {
                let fd = control_fd.unwrap_or(-1);
                // SAFETY: reading the control descriptor into our buffer.
                let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if r > 0 {
                    for msg in control.feed(&buf[..r as usize]) {
                        self.apply_control(msg, proxy);
                    }
                } else if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
                {
                    control_open = false;
                }
            }
            let mut closed = Vec::new();
            for (k, (fd, which)) in outs.iter().enumerate() {
                if !ready(6 + k) || !relaying {
                    continue;
                }
                // SAFETY: reading the box's output into our buffer.
                let r = unsafe { libc::read(*fd, buf.as_mut_ptr().cast(), buf.len()) };
                if r <= 0 {
                    // EOF, or EIO on a pty master once every slave is closed.
                    if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                        closed.push(k);
                    }
                    continue;
                }
                let mut chunk = &buf[..r as usize];
                let used = self.stdout_bytes + self.stderr_bytes;
                let mut over = false;
                if let Some(limit) = self.output_limit {
                    if used + chunk.len() as u64 > limit {
                        chunk = &chunk[..(limit.saturating_sub(used)) as usize];
                        over = true;
                    }
                }
                let target = if *which == 0 { 1 } else { 2 };
                let _ = write_all(target, chunk);
                if *which == 0 {
                    self.stdout_bytes += chunk.len() as u64;
                } else {
                    self.stderr_bytes += chunk.len() as u64;
                }
                if over && !self.killed {
                    self.limits_hit.push(LimitHit::Output);
                    self.event("output-limit", "output limit reached; box killed".into());
                    self.kill(spawned, cgroup);
                }
            }
            for k in closed.into_iter().rev() {
                outs.remove(k);
            }
        }
        if exited.is_none() {
            self.kill(spawned, cgroup);
            exited = spawned.reap();
        }
        exited
    }

    fn apply_control(
        &mut self,
        msg: Result<crate::ControlMessage, String>,
        proxy: Option<&airlock_proxy::server::ProxyHandle>,
    ) {
        match (msg, proxy) {
            (Ok(crate::ControlMessage::SetNetwork(rules)), Some(p)) => {
                let summary = format!(
                    "allowlist replaced: {} allowed, {} denied domains, {} IP grants, {} mapped hosts",
                    rules.allow_domains.len(),
                    rules.deny_domains.len(),
                    rules.allow_ips.len(),
                    rules.map_hosts.len()
                );
                p.set_rules(rules);
                self.event("network-policy", summary);
            }
            (Ok(crate::ControlMessage::SetNetwork(_)), None) => {
                self.event(
                    "control-error",
                    "the network policy can only change for a box started with --net proxy".into(),
                );
            }
            (Err(e), _) => self.event("control-error", e),
        }
    }

    fn finish(
        mut self,
        init_status: Option<libc::c_int>,
        cgroup_peak: Option<u64>,
        receipt: Receipt,
    ) -> RunResult {
        let text = String::from_utf8_lossy(&self.status).into_owned();
        let records = StatusRecord::parse_all(&text);
        let mut error = None;
        let mut exit_code = airlock_jail::SETUP_FAILED;
        let mut command_exit_code = None;
        let mut signal = None;
        let (mut user_us, mut sys_us, mut rss_kib) = (0, 0, 0);
        let setup_error = records.iter().find_map(|r| match r {
            StatusRecord::Error { stage, message, .. } => Some((stage.clone(), message.clone())),
            _ => None,
        });
        let exit = records.iter().find_map(|r| match r {
            StatusRecord::Exit {
                wait_status,
                user_us,
                system_us,
                max_rss_kib,
            } => Some((*wait_status, *user_us, *system_us, *max_rss_kib)),
            _ => None,
        });
        if let Some((ws, u, s, rss)) = exit {
            (user_us, sys_us, rss_kib) = (u, s, rss);
            if libc::WIFEXITED(ws) {
                let code = libc::WEXITSTATUS(ws);
                command_exit_code = Some(code);
                exit_code = code;
            } else if libc::WIFSIGNALED(ws) {
                let sig = libc::WTERMSIG(ws);
                signal = Some(sig);
                exit_code = 128 + sig;
            }
        }
        match &setup_error {
            Some((stage, message)) if stage == "exec" => {
                error = Some(message.clone());
                command_exit_code = None;
            }
            Some((stage, message)) => {
                error = Some(format!("the box could not be set up ({stage}): {message}"));
                exit_code = airlock_jail::SETUP_FAILED;
                command_exit_code = None;
            }
            None if exit.is_none() && !self.killed => {
                error = Some(format!("the box ended before reporting an exit status (init wait status {init_status:?})"));
            }
            None => {}
        }
        if self.limits_hit.contains(&LimitHit::Timeout) {
            exit_code = 124;
        } else if exit.is_none() && self.killed {
            exit_code = 128 + libc::SIGKILL;
            signal = Some(libc::SIGKILL);
        }
        self.event("exit", format!("exit status {exit_code}"));
        RunResult {
            exit_code,
            command_exit_code,
            signal,
            limits_hit: self.limits_hit,
            wall_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            cpu_user_ms: user_us as f64 / 1000.0,
            cpu_system_ms: sys_us as f64 / 1000.0,
            peak_memory_bytes: cgroup_peak.or((rss_kib > 0).then_some(rss_kib * 1024)),
            stdout_bytes: self.stdout_bytes,
            stderr_bytes: self.stderr_bytes,
            error,
            receipt,
            events: self.events,
            network_events: Vec::new(),
            network_events_dropped: 0,
            changes: None,
            denials: Vec::new(),
        }
    }
}

/// Whether `fd` has input (or its end) right now.
fn readable_now(fd: libc::c_int) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
}

/// Debug builds only: widens the window between the relay's poll and its turn, so that a test
/// can make a question finish inside it (`AIRLOCK_TEST_RELAY_DELAY_MS`).
#[cfg(debug_assertions)]
mod test_hooks {
    use std::sync::OnceLock;
    use std::time::Duration;

    pub(super) fn relay_delay() {
        static DELAY: OnceLock<Option<Duration>> = OnceLock::new();
        let delay = DELAY.get_or_init(|| {
            std::env::var("AIRLOCK_TEST_RELAY_DELAY_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Duration::from_millis)
        });
        if let Some(d) = delay {
            std::thread::sleep(*d);
        }
    }
}
