//! The box of one MCP session: started on the first tool call that needs it, reused by every
//! later call, ended when the session ends (the slot is dropped) or when it has been idle too
//! long. Boxes are [`RemoteSandbox`]es (each held by its own `airlock sandbox-host`), so they can
//! be started from any thread; a [`StartBox`] decides which thread forks them.

use airlock_policy::{NetworkMode, ResolvedPolicy};
use airlock_runtime::{CodeContext, RemoteSandbox, SandboxError, SandboxOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Starts boxes. The sandbox host asks for `PR_SET_PDEATHSIG`, which the kernel ties to the
/// thread that forked it: implementations fork from threads that live as long as the program.
pub trait StartBox: Send + Sync {
    /// Starts a box under `policy`.
    fn start(
        &self,
        policy: &ResolvedPolicy,
        opts: &SandboxOptions,
    ) -> Result<RemoteSandbox, SandboxError>;

    /// A box this starter started has ended (its slot let it go); for starters that count.
    fn ended(&self) {}
}

type Job = (
    ResolvedPolicy,
    SandboxOptions,
    Sender<Result<RemoteSandbox, SandboxError>>,
);

/// A [`StartBox`] with one permanent thread (for `airlock mcp` over stdio).
pub struct ThreadStarter {
    jobs: Mutex<Sender<Job>>,
}

impl ThreadStarter {
    /// Starts the thread that runs `exe sandbox-host` on request.
    pub fn new(exe: PathBuf) -> std::io::Result<ThreadStarter> {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("mcp-box-starter".into())
            .spawn(move || {
                while let Ok((policy, opts, reply)) = rx.recv() {
                    if let Err(Ok(orphan)) = reply
                        .send(RemoteSandbox::start(&exe, &policy, &opts))
                        .map_err(|e| e.0)
                    {
                        orphan.kill();
                    }
                }
            })?;
        Ok(ThreadStarter {
            jobs: Mutex::new(tx),
        })
    }
}

impl StartBox for ThreadStarter {
    fn start(
        &self,
        policy: &ResolvedPolicy,
        opts: &SandboxOptions,
    ) -> Result<RemoteSandbox, SandboxError> {
        let (reply, answer) = channel();
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send((policy.clone(), opts.clone(), reply));
        if sent.is_err() {
            return Err(SandboxError::Io(std::io::Error::other(
                "the box starter thread is gone",
            )));
        }
        answer.recv().map_err(|_| {
            SandboxError::Io(std::io::Error::other(
                "the box starter thread died while starting a box",
            ))
        })?
    }
}

/// A running box and its interpreter contexts.
pub struct LiveBox {
    pub sandbox: RemoteSandbox,
    /// Interpreter contexts by name.
    pub contexts: HashMap<String, CodeContext>,
    /// The proxy's decisions (proxied boxes), and how far they have been read.
    net_log: Option<(PathBuf, u64)>,
}

impl LiveBox {
    /// Network refusals recorded since the last call, one readable line each.
    pub fn new_denials(&mut self) -> Vec<String> {
        let Some((path, seen)) = &mut self.net_log else {
            return Vec::new();
        };
        let Ok(all) = std::fs::read(&*path) else {
            return Vec::new();
        };
        let start = (*seen as usize).min(all.len());
        let end = all[start..]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(start, |i| start + i + 1);
        *seen = end as u64;
        String::from_utf8_lossy(&all[start..end])
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["decision"] == "deny")
            .map(|v| {
                let target = format!("{}:{}", v["host"].as_str().unwrap_or("?"), v["port"]);
                let msg = v["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v["reason"].as_str().unwrap_or("not allowed").to_string());
                format!("airlock refused a network connection to {target}: {msg}")
            })
            .collect()
    }
}

impl Drop for LiveBox {
    fn drop(&mut self) {
        if let Some((path, _)) = &self.net_log {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The box slot of one session.
pub struct BoxSlot {
    policy: ResolvedPolicy,
    starter: Arc<dyn StartBox>,
    live: Option<LiveBox>,
    last_used: Instant,
}

static NEXT_LOG: AtomicU64 = AtomicU64::new(1);

/// A new, empty file for a box's network decisions, readable by this user only. Created here
/// with `O_EXCL` (in a shared temporary directory another user could have put a file or a
/// symlink at a guessable name; that name is skipped, never opened).
fn new_net_log() -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut last = None;
    for _ in 0..16 {
        let n = NEXT_LOG.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "airlock-mcp-{}-{n}-{nanos:x}.jsonl",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name for the network log")))
}

impl BoxSlot {
    /// An empty slot: nothing runs until [`BoxSlot::get`].
    pub fn new(policy: ResolvedPolicy, starter: Arc<dyn StartBox>) -> BoxSlot {
        BoxSlot {
            policy,
            starter,
            live: None,
            last_used: Instant::now(),
        }
    }

    /// The box, started now if there is none.
    pub fn get(&mut self) -> Result<&mut LiveBox, SandboxError> {
        self.last_used = Instant::now();
        if self.live.is_none() {
            let net_log = match self.policy.network {
                NetworkMode::Proxy => Some(new_net_log().map_err(|e| SandboxError::Setup {
                    stage: "network log".into(),
                    message: format!(
                        "cannot create it in {}: {e}; point TMPDIR at a writable directory",
                        std::env::temp_dir().display()
                    ),
                })?),
                _ => None,
            };
            let opts = SandboxOptions {
                audit: net_log.clone(),
            };
            let sandbox = self.starter.start(&self.policy, &opts)?;
            self.live = Some(LiveBox {
                sandbox,
                contexts: HashMap::new(),
                net_log: net_log.map(|p| (p, 0)),
            });
        }
        self.last_used = Instant::now();
        self.live
            .as_mut()
            .ok_or(SandboxError::Agent(airlock_runtime::AgentError::Closed))
    }

    /// Ends the box (the next call starts a fresh one).
    pub fn end(&mut self) {
        if let Some(live) = self.live.take() {
            drop(live);
            self.starter.ended();
        }
    }

    /// Ends the box if it has not been used for `idle`; says whether it did.
    pub fn end_if_idle(&mut self, idle: Duration) -> bool {
        if self.live.is_some() && self.last_used.elapsed() >= idle {
            self.end();
            return true;
        }
        false
    }
}

impl Drop for BoxSlot {
    fn drop(&mut self) {
        self.end();
    }
}

impl BoxSlot {
    /// The box, if one runs (without starting one).
    pub fn live_mut(&mut self) -> Option<&mut LiveBox> {
        self.live.as_mut()
    }
}

#[cfg(test)]
#[path = "boxes_tests.rs"]
mod tests;
