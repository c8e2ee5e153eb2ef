//! Long-lived processes and watches on an agent channel, one step at a time, for callers that relay
//! them elsewhere (the E2B gateway's process and watch services): start or attach, then take
//! what the process does piece by piece with a deadline, so the caller can interleave keepalives
//! and notice its own client leaving.

use crate::agent_client::AgentError;
use crate::channel::{AgentChannel, ExitInfo};
use crate::error::SandboxError;
use airlock_protocol::{
    Event, ExecReply, ExecRequest, FrameKind, FsEventKind, Op, ProcessInfo, ProcessList, TtySize,
    WatchReply,
};
use std::collections::BTreeMap;
use std::time::Instant;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct ProcessSpec {
    pub argv: Vec<String>,
    /// Added to (and overriding) the box's environment.
    pub env: BTreeMap<String, String>,
    /// The box's default working directory when `None`.
    pub cwd: Option<String>,
    /// Run on a new terminal of this size (output merged into stdout).
    pub tty: Option<TtySize>,
    /// Open a stdin channel.
    pub stdin: bool,
    pub timeout_ms: Option<u64>,
    pub tag: Option<String>,
    /// The box user (the default) or the box's root.
    pub user: airlock_protocol::ExecUser,
}

/// One thing a started or attached process did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessOutput {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Exit(ExitInfo),
}

/// One change under a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsChange {
    pub kind: FsEventKind,
    pub path: String,
    pub from: Option<String>,
}

fn protocol(e: airlock_protocol::ErrorBody) -> SandboxError {
    AgentError::Protocol(e.message).into()
}

impl AgentChannel {
    /// Starts a process and returns its pid and channels; read it with [`AgentChannel::next_output`].
    pub fn start_process(&mut self, spec: &ProcessSpec) -> Result<ExecReply, SandboxError> {
        if spec.argv.is_empty() {
            return Err(AgentError::Refused {
                code: "invalid".into(),
                message: "the command is empty: give at least the program name".into(),
            }
            .into());
        }
        let (env, cwd) = self.defaults();
        let mut all = env.clone();
        all.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let req = ExecRequest {
            argv: spec.argv.clone(),
            env: all,
            cwd: Some(spec.cwd.clone().unwrap_or_else(|| cwd.to_string())),
            tty: spec.tty,
            stdin: spec.stdin,
            timeout_ms: spec.timeout_ms,
            tag: spec.tag.clone(),
            user: spec.user,
        };
        let reply = self.client_mut().call(Op::Exec(req))?;
        reply.body().map_err(protocol)
    }

    /// New output channels for a running process (its recent output first when `replay`).
    pub fn attach_process(&mut self, pid: i32, replay: bool) -> Result<ExecReply, SandboxError> {
        let reply = self.client_mut().call(Op::Attach { pid, replay })?;
        reply.body().map_err(protocol)
    }

    /// The next thing `started` did, or `None` at `deadline`. After `Exit`, nothing more comes.
    pub fn next_output(
        &mut self,
        started: &ExecReply,
        deadline: Instant,
    ) -> Result<Option<ProcessOutput>, SandboxError> {
        let (pid, out, err) = (started.pid, started.stdout, started.stderr);
        loop {
            let frame = self.client_mut().wait_for_until(deadline, |f| {
                f.channel == out
                    || Some(f.channel) == err
                    || (f.kind == FrameKind::Event && matches!(Event::decode(&f.body), Ok(Event::Exit { pid: p, .. }) if p == pid))
            })?;
            let Some(f) = frame else { return Ok(None) };
            match f.kind {
                FrameKind::Data if f.channel == out => {
                    return Ok(Some(ProcessOutput::Stdout(f.body)))
                }
                FrameKind::Data => return Ok(Some(ProcessOutput::Stderr(f.body))),
                FrameKind::Event => {
                    if let Ok(Event::Exit {
                        code,
                        signal,
                        timed_out,
                        ..
                    }) = Event::decode(&f.body)
                    {
                        return Ok(Some(ProcessOutput::Exit(ExitInfo {
                            pid,
                            exit_code: code,
                            signal,
                            timed_out,
                        })));
                    }
                }
                _ => {}
            }
        }
    }

    /// Sends `signal` to the process group of `pid`.
    pub fn signal_process(&mut self, pid: i32, signal: i32) -> Result<(), SandboxError> {
        self.client_mut().call(Op::Signal { pid, signal })?;
        Ok(())
    }

    /// Resizes the terminal of a tty process.
    pub fn resize_process(&mut self, pid: i32, size: TtySize) -> Result<(), SandboxError> {
        self.client_mut().call(Op::Resize {
            pid,
            rows: size.rows,
            cols: size.cols,
        })?;
        Ok(())
    }

    /// The box's processes (running, and recently finished).
    pub fn list_processes(&mut self) -> Result<Vec<ProcessInfo>, SandboxError> {
        let reply = self.client_mut().call(Op::ListProcesses)?;
        let list: ProcessList = reply.body().map_err(protocol)?;
        Ok(list.processes)
    }

    /// Writes to a process's stdin channel (any channel to the agent may, given the stream's channel number).
    pub fn send_input(&mut self, channel: u32, data: &[u8]) -> Result<(), SandboxError> {
        self.client_mut().send_chunk(channel, data)?;
        Ok(())
    }

    /// Closes a process's stdin channel.
    pub fn close_input(&mut self, channel: u32) -> Result<(), SandboxError> {
        self.client_mut().send_eof(channel)?;
        Ok(())
    }

    /// Starts watching `path`; changes come from [`AgentChannel::next_change`].
    pub fn watch(&mut self, path: &str, recursive: bool) -> Result<u32, SandboxError> {
        let reply = self.client_mut().call(Op::Watch {
            path: path.to_string(),
            recursive,
        })?;
        let w: WatchReply = reply.body().map_err(protocol)?;
        Ok(w.watch)
    }

    /// The next change under `watch`, or `None` at `deadline`.
    pub fn next_change(
        &mut self,
        watch: u32,
        deadline: Instant,
    ) -> Result<Option<FsChange>, SandboxError> {
        let frame = self.client_mut().wait_for_until(deadline, |f| {
            f.kind == FrameKind::Event
                && matches!(Event::decode(&f.body), Ok(Event::Fs { watch: w, .. }) if w == watch)
        })?;
        match frame.map(|f| Event::decode(&f.body)) {
            Some(Ok(Event::Fs {
                kind, path, from, ..
            })) => Ok(Some(FsChange { kind, path, from })),
            _ => Ok(None),
        }
    }

    /// Stops a watch.
    pub fn unwatch(&mut self, watch: u32) -> Result<(), SandboxError> {
        self.client_mut().call(Op::Unwatch { watch })?;
        Ok(())
    }
}
