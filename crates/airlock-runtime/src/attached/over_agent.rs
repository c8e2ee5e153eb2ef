//! The generic attached run: a box from any backend, the command run through its agent.

use super::signals::SignalGuard;
use super::tty::{is_tty, RawMode};
use super::{AttachedAsker, RunOptions, StdinMode};
use crate::backend::{Backend, BackendError, NetworkEvent, NetworkSink, StartOptions, Template};
use crate::channel_process::{ProcessOutput, ProcessSpec};
use crate::result::{Event, LimitHit, RunResult};
use crate::{AgentError, ExitInfo, LiveSandbox, SandboxError};
use airlock_policy::{ChangesMode, FilesystemPolicy, ResolvedPolicy};
use airlock_protocol::TtySize;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Network decisions kept in the result document; the audit file has them all.
const KEPT_NETWORK_EVENTS: usize = 10_000;
/// How often the loop looks at forwarded signals and the box while the command is quiet.
const TICK: Duration = Duration::from_millis(20);
/// How long a killed command gets to report its exit before the box is ended anyway.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// airlock's own failure.
const FAILED: i32 = 125;
/// How long the relay waits before trying again for its turn at the terminal.
const TURN_WAIT: Duration = Duration::from_millis(5);
/// How long the stdin relay waits for input before looking again (with an asker).
const STDIN_POLL_MS: i32 = 50;
/// How long a lost agent connection waits for the box to say why it ended.
const END_REASON_WAIT: Duration = Duration::from_millis(500);

/// Collects a run's network decisions for its result document.
#[derive(Default)]
struct Collected {
    events: Mutex<(Vec<NetworkEvent>, u64)>,
}

impl NetworkSink for Collected {
    fn network_event(&self, event: NetworkEvent) {
        let mut kept = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.0.len() < KEPT_NETWORK_EVENTS {
            kept.0.push(event);
        } else {
            kept.1 += 1;
        }
    }
}

/// Runs `argv` in a new box of `backend` under `policy`, relaying it to airlock's own stdio;
/// the box is ended before this returns. Errors are airlock's failures (exit status 125); what
/// the command did, including failing to start, is in the result.
pub fn run_over_agent<B: Backend + ?Sized>(
    backend: &B,
    policy: &ResolvedPolicy,
    template: &Template,
    argv: &[String],
    opts: &RunOptions,
) -> Result<RunResult, BackendError> {
    run_over_agent_with(backend, policy, template, argv, opts, Stdio::INHERIT)
}

/// The descriptors an attached run relays: airlock's own 0, 1 and 2, or others (tests).
#[derive(Debug, Clone, Copy)]
pub struct Stdio {
    pub stdin: libc::c_int,
    pub stdout: libc::c_int,
    pub stderr: libc::c_int,
}

impl Stdio {
    /// airlock's own stdin, stdout and stderr.
    pub const INHERIT: Stdio = Stdio {
        stdin: 0,
        stdout: 1,
        stderr: 2,
    };
}

/// [`run_over_agent`] relaying `stdio` instead of airlock's own descriptors. The descriptors stay
/// the caller's; stdin is read on a thread of its own until EOF (it may outlive the call while
/// `stdin` stays open).
pub fn run_over_agent_with<B: Backend + ?Sized>(
    backend: &B,
    policy: &ResolvedPolicy,
    template: &Template,
    argv: &[String],
    opts: &RunOptions,
    stdio: Stdio,
) -> Result<RunResult, BackendError> {
    let kind = backend.kind();
    if opts.control_fd.is_some() {
        return Err(BackendError::Invalid(format!(
            "--control-fd works with the native backend only so far, not {kind}: change a running box's allowlist through airlock serve instead"
        )));
    }
    if policy.changes == ChangesMode::Apply
        && matches!(
            &policy.filesystem,
            FilesystemPolicy::Isolated {
                workspace: Some(_),
                ..
            }
        )
    {
        return Err(BackendError::Invalid(format!(
            "a {kind} box writes its workspace directly: use --changes direct (changes = \"direct\"), or --backend native for a change layer applied at the end"
        )));
    }
    let start = Instant::now();
    // Blocked before the backend starts threads of its own, so that they inherit the mask and
    // the signals reach the signalfd instead of ending airlock.
    let signals = SignalGuard::block()
        .map_err(|e| BackendError::Start(format!("cannot block the signals to forward: {e}")))?;
    let collected = Arc::new(Collected::default());
    let start_opts = StartOptions {
        network_events: Some(collected.clone()),
        audit_file: opts.audit.clone(),
        approvals: opts
            .asker
            .clone()
            .map(|a| -> Arc<dyn crate::backend::ApprovalSink> { a }),
    };
    let instance = backend.start(policy, template, &start_opts)?;
    let receipt = instance.receipt().clone();
    let mut sandbox = LiveSandbox::connect(instance).map_err(|e| match e {
        SandboxError::Backend(b) => b,
        other => BackendError::Host(other.to_string()),
    })?;
    if let Some(asker) = &opts.asker {
        asker.attach(sandbox.approval_answerer());
    }
    let mut run = Attached {
        start,
        deadline: policy.limits.timeout.map(|t| start + t),
        output_limit: policy.limits.output,
        stdio,
        events: Vec::new(),
        limits_hit: Vec::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        killed_at: None,
        asker: opts.asker.clone(),
    };
    let outcome = run.relay(&mut sandbox, argv, opts.stdin, &signals);
    if let Some(asker) = &opts.asker {
        asker.close();
    }
    let usage = sandbox.usage().ok();
    let _ = sandbox.flush_network_events();
    sandbox.kill();
    drop(signals);
    let (network_events, network_events_dropped) = std::mem::take(
        &mut *collected
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    if network_events
        .iter()
        .any(|e| e.reason.as_deref() == Some("byte-budget-exhausted"))
    {
        run.limits_hit.push(LimitHit::ByteBudget);
        run.event(
            "byte-budget",
            "the box's network byte budget ran out; connections were cut".into(),
        );
    }
    let (exit_code, command_exit_code, signal, error) = match outcome {
        Outcome::Exited(info) => {
            let timed_out = info.timed_out || run.limits_hit.contains(&LimitHit::Timeout);
            match (info.exit_code, info.signal) {
                _ if timed_out => (124, info.exit_code, info.signal, None),
                (Some(code), _) => (code, Some(code), None, None),
                (None, Some(sig)) => (128 + sig, None, Some(sig), None),
                (None, None) => (
                    FAILED,
                    None,
                    None,
                    Some("the command ended without an exit status".into()),
                ),
            }
        }
        Outcome::NotStarted { code, message } => (code, None, None, Some(message)),
        Outcome::Lost(why) => {
            if run.limits_hit.contains(&LimitHit::Timeout) {
                (124, None, None, None)
            } else {
                (FAILED, None, None, Some(why))
            }
        }
    };
    run.event("exit", format!("exit status {exit_code}"));
    let cpu_ms = usage.and_then(|u| u.cpu_usec).map(|us| us as f64 / 1000.0);
    let mut result = RunResult {
        exit_code,
        command_exit_code,
        signal,
        limits_hit: run.limits_hit,
        wall_ms: start.elapsed().as_secs_f64() * 1000.0,
        // The seam reports the box's CPU time as one figure: it is given as user time.
        cpu_user_ms: cpu_ms.unwrap_or(0.0),
        cpu_system_ms: 0.0,
        peak_memory_bytes: usage.and_then(|u| u.memory_peak_bytes),
        stdout_bytes: run.stdout_bytes,
        stderr_bytes: run.stderr_bytes,
        error,
        receipt,
        events: run.events,
        network_events,
        network_events_dropped,
        changes: None,
        denials: Vec::new(),
    };
    result.collect_denials();
    Ok(result)
}

/// How the command ended, as far as the relay saw.
enum Outcome {
    Exited(ExitInfo),
    /// The agent could not start it (127: not found, 126: not runnable).
    NotStarted {
        code: i32,
        message: String,
    },
    /// The box or its agent went away before the command reported its exit.
    Lost(String),
}

struct Attached {
    start: Instant,
    deadline: Option<Instant>,
    output_limit: Option<u64>,
    stdio: Stdio,
    events: Vec<Event>,
    limits_hit: Vec<LimitHit>,
    stdout_bytes: u64,
    stderr_bytes: u64,
    /// When the command was killed (timeout, output cap).
    killed_at: Option<Instant>,
    /// Who answers the box's held connections on this side (the terminal approver).
    asker: Option<Arc<dyn AttachedAsker>>,
}

impl Attached {
    fn kill(&mut self, control: &mut crate::AgentChannel, pid: i32, why: &str) {
        if self.killed_at.is_none() {
            self.event("kill", why.to_string());
            let _ = control.signal_process(pid, libc::SIGKILL);
            self.killed_at = Some(Instant::now());
        }
    }

    fn event(&mut self, kind: &'static str, detail: String) {
        self.events.push(Event {
            time_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            kind,
            detail,
        });
    }

    fn relay(
        &mut self,
        sandbox: &mut LiveSandbox,
        argv: &[String],
        stdin: StdinMode,
        signals: &SignalGuard,
    ) -> Outcome {
        let fd_in = self.stdio.stdin;
        let tty = stdin == StdinMode::Auto && is_tty(fd_in) && is_tty(self.stdio.stdout);
        // Raw mode while the box runs, restored on every way out of this function.
        let _raw = if tty {
            RawMode::enable(fd_in).ok()
        } else {
            None
        };
        let mut control = sandbox.new_channel();
        let input = sandbox.new_channel();
        let spec = ProcessSpec {
            argv: argv.to_vec(),
            tty: tty.then(|| window_size(fd_in)),
            stdin: stdin == StdinMode::Auto,
            ..ProcessSpec::default()
        };
        let started = match sandbox.channel().start_process(&spec) {
            Ok(s) => s,
            Err(SandboxError::Agent(AgentError::Refused { code, message })) => {
                let code = if code == "notfound" { 127 } else { 126 };
                return Outcome::NotStarted { code, message };
            }
            Err(e) => return Outcome::Lost(format!("the command could not be started: {e}")),
        };
        self.event("start", format!("pid {} in the box", started.pid));
        if let Some(channel) = started.stdin {
            forward_stdin(fd_in, input, channel, self.asker.clone());
        }
        let pid = started.pid;
        loop {
            let now = Instant::now();
            if let Some(deadline) = self.deadline {
                if now >= deadline && !self.limits_hit.contains(&LimitHit::Timeout) {
                    self.limits_hit.push(LimitHit::Timeout);
                    self.kill(&mut control, pid, "timeout reached; command killed");
                }
            }
            let wait_until = match (self.deadline, self.killed_at) {
                (_, Some(at)) => {
                    if now >= at + KILL_GRACE {
                        return Outcome::Lost(
                            "the command did not report its exit after it was killed".into(),
                        );
                    }
                    (now + TICK).min(at + KILL_GRACE)
                }
                (Some(d), None) if d > now => (now + TICK).min(d),
                _ => now + TICK,
            };
            if self.asker.as_ref().is_some_and(|a| a.asking()) {
                // A question holds the terminal: the box's output waits in its connection.
                std::thread::sleep(wait_until.saturating_duration_since(now));
                if let Some(end) = sandbox.ended() {
                    return Outcome::Lost(format!(
                        "the box ended before the command did: {}",
                        end.reason
                    ));
                }
                self.forward_signals(signals, &mut control, pid, tty, fd_in);
                continue;
            }
            match sandbox.channel().next_output(&started, wait_until) {
                Ok(Some(ProcessOutput::Exit(info))) => return Outcome::Exited(info),
                Ok(Some(ProcessOutput::Stdout(data))) => {
                    if self.write_capped(self.stdio.stdout, &data) {
                        self.limits_hit.push(LimitHit::Output);
                        self.kill(&mut control, pid, "output limit reached; command killed");
                    }
                }
                Ok(Some(ProcessOutput::Stderr(data))) => {
                    if self.write_capped(self.stdio.stderr, &data) {
                        self.limits_hit.push(LimitHit::Output);
                        self.kill(&mut control, pid, "output limit reached; command killed");
                    }
                }
                Ok(None) => {
                    if let Some(end) = sandbox.ended() {
                        return Outcome::Lost(format!(
                            "the box ended before the command did: {}",
                            end.reason
                        ));
                    }
                }
                Err(e) => {
                    // The box's own account of its end (a limit, a kill) says more than the
                    // closed connection, and follows it closely.
                    return Outcome::Lost(match sandbox.wait_ended(END_REASON_WAIT) {
                        Some(end) => {
                            format!("the box ended before the command did: {}", end.reason)
                        }
                        None => format!("the box's agent went away: {e}"),
                    });
                }
            }
            self.forward_signals(signals, &mut control, pid, tty, fd_in);
        }
    }

    /// Forwards the signals airlock received to the command (a window size to its terminal).
    fn forward_signals(
        &mut self,
        signals: &SignalGuard,
        control: &mut crate::AgentChannel,
        pid: i32,
        tty: bool,
        fd_in: libc::c_int,
    ) {
        while let Some(sig) = signals.read() {
            if sig == libc::SIGWINCH {
                if tty {
                    let _ = control.resize_process(pid, window_size(fd_in));
                }
                continue;
            }
            self.event("signal", format!("signal {sig} forwarded"));
            let _ = control.signal_process(pid, sig);
        }
    }

    /// Writes what fits under the output cap to `fd`; true when the cap was reached now.
    fn write_capped(&mut self, fd: libc::c_int, data: &[u8]) -> bool {
        let used = self.stdout_bytes + self.stderr_bytes;
        let mut chunk = data;
        let mut over = false;
        if let Some(limit) = self.output_limit {
            if used + chunk.len() as u64 > limit {
                chunk = &chunk[..limit.saturating_sub(used) as usize];
                over = !self.limits_hit.contains(&LimitHit::Output);
            }
        }
        match &self.asker {
            None => {
                let _ = write_all(fd, chunk);
            }
            // Between questions only: one that is up keeps the terminal to itself.
            Some(asker) => {
                while !asker.relay_turn(&mut || {
                    let _ = write_all(fd, chunk);
                }) {
                    std::thread::sleep(TURN_WAIT);
                }
            }
        }
        if fd == self.stdio.stdout {
            self.stdout_bytes += chunk.len() as u64;
        } else {
            self.stderr_bytes += chunk.len() as u64;
        }
        over
    }
}

/// Relays `fd` (airlock's stdin) to the command's stdin channel on a thread of its own, until
/// EOF. With an `asker`, input is read only between questions (a key typed to answer one is
/// the question's, never the box's).
fn forward_stdin(
    fd: libc::c_int,
    mut input: crate::AgentChannel,
    channel: u32,
    asker: Option<Arc<dyn AttachedAsker>>,
) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match &asker {
                None => read_some(fd, &mut buf),
                Some(asker) => {
                    if !readable(fd, STDIN_POLL_MS) {
                        continue;
                    }
                    // Read only if it is still there once no question can start.
                    let mut got = None;
                    let turned = asker.relay_turn(&mut || {
                        if readable(fd, 0) {
                            got = Some(read_some(fd, &mut buf));
                        }
                    });
                    match got {
                        Some(n) => n,
                        None => {
                            if !turned {
                                std::thread::sleep(TURN_WAIT);
                            }
                            continue;
                        }
                    }
                }
            };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                let _ = input.close_input(channel);
                return;
            }
            if input.send_input(channel, &buf[..n as usize]).is_err() {
                return;
            }
        }
    });
}

fn read_some(fd: libc::c_int, buf: &mut [u8]) -> isize {
    // SAFETY: reading airlock's stdin into our own buffer.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

/// Whether `fd` has input (or its end) within `ms` milliseconds.
fn readable(fd: libc::c_int, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

fn window_size(fd: libc::c_int) -> TtySize {
    // SAFETY: winsize is plain data for TIOCGWINSZ to fill.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer for TIOCGWINSZ.
    if unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_row > 0 {
        TtySize {
            rows: ws.ws_row,
            cols: ws.ws_col,
        }
    } else {
        TtySize { rows: 24, cols: 80 }
    }
}

fn write_all(fd: libc::c_int, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: writing from a valid buffer to one of airlock's own descriptors.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}
