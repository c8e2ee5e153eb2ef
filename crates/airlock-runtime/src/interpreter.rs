//! Code interpreter contexts inside a sandbox: one driver process per context (Python,
//! JavaScript, TypeScript or Bash), started through the agent like any command (so under the box's isolation), fed
//! one JSON request per execution on its stdin, answering with JSON events on its stdout (the
//! driver's fd 3; the driver's own fd 1 goes to stderr, so stray output of child processes
//! cannot corrupt the event stream).

use crate::agent_client::AgentError;
use crate::channel::AgentChannel;
use crate::error::SandboxError;
use airlock_protocol::{Event, ExecReply, ExecRequest, FrameKind, Op};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Where drivers are written inside the box (the box's scratch /tmp).
const DRIVER_DIR: &str = "/tmp/.airlock-interpreter";
/// How long an interrupted execution may take to end before its context is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// How often a quiet execution asks whether its reader is still there.
pub const WANTED_POLL: Duration = Duration::from_millis(200);
/// Longest event line accepted from a driver.
const MAX_LINE: usize = 16 << 20;

/// A language with a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    JavaScript,
    /// JavaScript's driver with each cell's types stripped first, by the `typescript` package
    /// found in the box (`node_modules` of the working directory, `NODE_PATH`, npm's global
    /// folders); where there is none, each cell's error says so and how to install it.
    #[serde(rename = "typescript")]
    TypeScript,
    /// A persistent bash (`cd` and exported variables persist).
    Bash,
}

impl Language {
    fn driver(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Language::Python => (
                "python_driver.py",
                airlock_agent::drivers::PYTHON,
                "/usr/bin/python3",
            ),
            Language::JavaScript => ("js_driver.js", airlock_agent::drivers::JAVASCRIPT, "node"),
            // The same driver under the name that makes it strip types (see its header).
            Language::TypeScript => ("ts_driver.js", airlock_agent::drivers::JAVASCRIPT, "node"),
            Language::Bash => (
                "bash_driver.py",
                airlock_agent::drivers::BASH,
                "/usr/bin/python3",
            ),
        }
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// One event of an execution.
#[derive(Debug, Clone, PartialEq)]
pub enum CodeEvent {
    /// Output text and when the driver saw it (Unix seconds).
    Stdout {
        text: String,
        time: f64,
    },
    Stderr {
        text: String,
        time: f64,
    },
    /// `display(...)` output or a figure: mime type → content.
    Display(Value),
    /// The value of the last expression: mime type → content.
    Result(Value),
    Error {
        name: String,
        value: String,
        traceback: Vec<String>,
    },
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeEnd {
    pub execution_count: u64,
    /// `ok`, `error` or `interrupted`.
    pub status: String,
}

/// A running interpreter context. Serializable so that a memory checkpoint can carry it: a box
/// restored from the checkpoint takes the context over with
/// [`AgentChannel::reattach_context`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct CodeContext {
    pub language: Language,
    pub pid: i32,
    stdin: u32,
    events: u32,
    stray: Option<u32>,
    #[serde(skip)]
    pending: Vec<u8>,
    next_id: u64,
}

impl AgentChannel {
    /// Starts a new context (its own driver process) in `cwd` (the box's default if `None`).
    pub fn create_context(
        &mut self,
        language: Language,
        cwd: Option<&str>,
    ) -> Result<CodeContext, SandboxError> {
        let (file, source, interpreter) = language.driver();
        let path = format!("{DRIVER_DIR}/{file}");
        let client = self.client_mut();
        client.call(Op::MakeDir {
            path: DRIVER_DIR.into(),
            parents: true,
        })?;
        self.write_file(&path, source.as_bytes())?;
        let (env, default_cwd) = self.defaults();
        let req = ExecRequest {
            argv: vec![
                "sh".into(),
                "-c".into(),
                format!("exec {interpreter} {path} 3>&1 1>&2"),
            ],
            env: env.clone(),
            cwd: Some(cwd.unwrap_or(default_cwd).to_string()),
            tty: None,
            stdin: true,
            timeout_ms: None,
            tag: Some(format!("code-{}", file)),
            user: Default::default(),
        };
        let reply = self.client_mut().call(Op::Exec(req))?;
        let started: ExecReply = reply.body().map_err(|e| AgentError::Protocol(e.message))?;
        let stdin = started
            .stdin
            .ok_or_else(|| AgentError::Protocol("the driver has no stdin".into()))?;
        Ok(CodeContext {
            language,
            pid: started.pid,
            stdin,
            events: started.stdout,
            stray: started.stderr,
            pending: Vec::new(),
            next_id: 1,
        })
    }

    /// Runs `code` in `ctx`, passing events to `on_event` as they come. Past `timeout` the
    /// execution is interrupted (KeyboardInterrupt in Python) and the context keeps its state.
    /// If the driver dies (e.g. the box's memory limit), an error says so; create a new context.
    pub fn run_code(
        &mut self,
        ctx: &mut CodeContext,
        code: &str,
        env: &BTreeMap<String, String>,
        timeout: Option<Duration>,
        mut on_event: impl FnMut(&CodeEvent),
    ) -> Result<CodeEnd, SandboxError> {
        self.run_code_while(
            ctx,
            code,
            env,
            timeout,
            |e| {
                on_event(e);
                true
            },
            || true,
        )
    }

    /// [`run_code`](Self::run_code), where `on_event` answering `false`, or `wanted` answering
    /// `false` (asked every [`WANTED_POLL`] while the code is quiet), means its reader went away:
    /// the execution is interrupted as a timeout would; later events are still passed on.
    pub fn run_code_while(
        &mut self,
        ctx: &mut CodeContext,
        code: &str,
        env: &BTreeMap<String, String>,
        timeout: Option<Duration>,
        mut on_event: impl FnMut(&CodeEvent) -> bool,
        wanted: impl Fn() -> bool,
    ) -> Result<CodeEnd, SandboxError> {
        let id = format!("e{}", ctx.next_id);
        ctx.next_id += 1;
        let mut line = serde_json::to_vec(&serde_json::json!({"id": id, "code": code, "env": env}))
            .map_err(|e| AgentError::Protocol(e.to_string()))?;
        line.push(b'\n');
        let client = self.client_mut();
        client.send_chunk(ctx.stdin, &line)?;
        let mut deadline = timeout.map(|t| Instant::now() + t);
        let mut interrupted = false;
        let (pid, events, stray) = (ctx.pid, ctx.events, ctx.stray);
        let mut reader_gone = false;
        loop {
            if reader_gone && !interrupted {
                client.call(Op::Signal {
                    pid,
                    signal: libc::SIGINT,
                })?;
                interrupted = true;
                deadline = Some(Instant::now() + INTERRUPT_GRACE);
            }
            let mut on_event = |e: &CodeEvent| {
                if !on_event(e) {
                    reader_gone = true;
                }
            };
            let want = |f: &airlock_protocol::Frame| {
                f.channel == events
                    || Some(f.channel) == stray
                    || (f.kind == FrameKind::Event
                        && matches!(Event::decode(&f.body), Ok(Event::Exit { pid: p, .. }) if p == pid))
            };
            // Wake up at least every WANTED_POLL to notice a reader that left while the code is
            // silent (e.g. sleeping).
            let poll = Instant::now() + WANTED_POLL;
            let wake = deadline.map_or(poll, |d| d.min(poll));
            let frame = client.wait_for_until(wake, want)?;
            if frame.is_none() && deadline.is_none_or(|d| Instant::now() < d) {
                if !interrupted && !wanted() {
                    reader_gone = true;
                }
                continue;
            }
            let Some(f) = frame else {
                if interrupted {
                    client.call(Op::Signal {
                        pid,
                        signal: libc::SIGKILL,
                    })?;
                    deadline = None;
                } else {
                    client.call(Op::Signal {
                        pid,
                        signal: libc::SIGINT,
                    })?;
                    interrupted = true;
                    deadline = Some(Instant::now() + INTERRUPT_GRACE);
                }
                continue;
            };
            match f.kind {
                FrameKind::Data if f.channel == events => {
                    ctx.pending.extend_from_slice(&f.body);
                    if ctx.pending.len() > MAX_LINE && !ctx.pending.contains(&b'\n') {
                        return Err(AgentError::Protocol(
                            "the interpreter driver sent an oversized event".into(),
                        )
                        .into());
                    }
                    while let Some(nl) = ctx.pending.iter().position(|b| *b == b'\n') {
                        let raw: Vec<u8> = ctx.pending.drain(..=nl).collect();
                        let Ok(v) = serde_json::from_slice::<Value>(&raw[..raw.len() - 1]) else {
                            continue;
                        };
                        if v.get("id").and_then(Value::as_str) != Some(id.as_str()) {
                            continue;
                        }
                        let text =
                            |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                        match v.get("type").and_then(Value::as_str) {
                            Some("stdout") => on_event(&CodeEvent::Stdout {
                                text: text("text"),
                                time: v.get("time").and_then(Value::as_f64).unwrap_or_else(now),
                            }),
                            Some("stderr") => on_event(&CodeEvent::Stderr {
                                text: text("text"),
                                time: v.get("time").and_then(Value::as_f64).unwrap_or_else(now),
                            }),
                            Some("display") => on_event(&CodeEvent::Display(
                                v.get("data").cloned().unwrap_or(Value::Null),
                            )),
                            Some("result") => on_event(&CodeEvent::Result(
                                v.get("data").cloned().unwrap_or(Value::Null),
                            )),
                            Some("error") => on_event(&CodeEvent::Error {
                                name: text("name"),
                                value: text("value"),
                                traceback: v
                                    .get("traceback")
                                    .and_then(Value::as_array)
                                    .map(|a| {
                                        a.iter()
                                            .filter_map(|l| l.as_str().map(str::to_string))
                                            .collect()
                                    })
                                    .unwrap_or_default(),
                            }),
                            Some("end") => {
                                return Ok(CodeEnd {
                                    execution_count: v
                                        .get("execution_count")
                                        .and_then(Value::as_u64)
                                        .unwrap_or(0),
                                    status: text("status"),
                                })
                            }
                            _ => {}
                        }
                    }
                }
                FrameKind::Data => on_event(&CodeEvent::Stderr {
                    text: String::from_utf8_lossy(&f.body).into_owned(),
                    time: now(),
                }),
                FrameKind::Event => {
                    let how = match Event::decode(&f.body) {
                        Ok(Event::Exit { signal: Some(9), .. }) => "was killed (SIGKILL: the box's memory limit, or an interrupt that did not end it)".to_string(),
                        Ok(Event::Exit { code, signal, .. }) => format!("exited (code {code:?}, signal {signal:?})"),
                        _ => "ended".to_string(),
                    };
                    return Err(SandboxError::Setup {
                        stage: "interpreter".into(),
                        message: format!(
                            "the {:?} context {how}; its state is lost — create a new context",
                            ctx.language
                        ),
                    });
                }
                _ => {}
            }
        }
    }

    /// Takes over a context made on another connection to the same agent session (a box
    /// restored from a memory checkpoint continues its agent's session on a new connection): its
    /// driver process gets new output channels on this one, and keeps its input channel and its
    /// state (variables, imports). Errors: the driver is gone.
    pub fn reattach_context(&mut self, ctx: CodeContext) -> Result<CodeContext, SandboxError> {
        let reply = self.attach_process(ctx.pid, false)?;
        Ok(CodeContext {
            events: reply.stdout,
            stray: reply.stderr,
            pending: Vec::new(),
            ..ctx
        })
    }

    /// Ends a context's driver process.
    pub fn close_context(&mut self, ctx: CodeContext) -> Result<(), SandboxError> {
        self.client_mut().call(Op::Signal {
            pid: ctx.pid,
            signal: libc::SIGKILL,
        })?;
        Ok(())
    }
}
