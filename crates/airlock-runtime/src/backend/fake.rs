//! A backend for tests of what sits above the seam (the server, the E2B gateway, MCP): the
//! agent runs as a plain child process over a socketpair — no namespaces, no seccomp, no
//! limits, no proxy. It isolates nothing and says so in its receipt; it exists only with the
//! `fake` feature, which only test builds turn on.

use super::{
    Backend, BackendError, BoxEnd, BoxInstance, Capabilities, CommandDefaults, StartOptions,
    Template, Usage,
};
use crate::agent_client::AgentClient;
use crate::receipt::LayerStatus;
use crate::Receipt;
use airlock_policy::{BackendKind, Egress, ResolvedPolicy};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Starts each "box" as `program args… --fd 3` (the standalone agent) on the host, unconfined.
/// It answers to the `native` kind, so code above the seam runs unchanged.
pub struct FakeBackend {
    program: PathBuf,
    args: Vec<String>,
}

impl FakeBackend {
    /// `program args…` must serve the agent protocol on `--fd N` (`airlock-agent`, or
    /// `airlock agent`).
    pub fn new(program: PathBuf, args: Vec<String>) -> FakeBackend {
        FakeBackend { program, args }
    }

    /// The standalone `airlock-agent` built beside the running test binary
    /// (`target/<profile>/deps/<test>` → `target/<profile>/airlock-agent`), or why not.
    pub fn beside_test_binary() -> Result<FakeBackend, String> {
        let me =
            std::env::current_exe().map_err(|e| format!("cannot find this test binary: {e}"))?;
        let exe = me
            .parent()
            .and_then(Path::parent)
            .map(|dir| dir.join("airlock-agent"))
            .ok_or_else(|| format!("{} is not in a cargo target directory", me.display()))?;
        if !exe.exists() {
            return Err(format!(
                "{} is missing: build it first (cargo build -p airlock-agent)",
                exe.display()
            ));
        }
        Ok(FakeBackend::new(exe, Vec::new()))
    }
}

fn receipt() -> Receipt {
    let mut r = Receipt::default();
    r.add(
        "everything",
        LayerStatus::NotEnforced,
        "fake backend (tests only)",
        "the agent runs as a plain host process: nothing is isolated or limited",
    );
    r
}

impl Backend for FakeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Native
    }

    fn probe(&self) -> Result<(), String> {
        Ok(())
    }

    fn plan(&self, _: &ResolvedPolicy, _: &Template) -> Result<Receipt, BackendError> {
        Ok(receipt())
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        _: &Template,
        _: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        let err = |e: std::io::Error| BackendError::Start(format!("fake agent: {e}"));
        let (ours, theirs) = UnixStream::pair().map_err(err)?;
        let fd = theirs.as_raw_fd();
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .args(["--fd", "3"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .env_clear()
            .envs(policy.env.iter().cloned())
            .current_dir("/");
        // SAFETY: in the forked child before exec: dup2 and fcntl are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, 3) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::fcntl(3, libc::F_SETFD, 0);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(err)?;
        drop(theirs);
        let stream = AgentClient::connect(ours, Duration::from_secs(10))
            .ok()
            .and_then(AgentClient::into_stream);
        let Some(stream) = stream else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BackendError::Start("the fake agent did not greet".into()));
        };
        Ok(Box::new(FakeInstance {
            child: Mutex::new(child),
            receipt: receipt(),
            defaults: CommandDefaults {
                env: policy.env.iter().cloned().collect(),
                cwd: policy.cwd.to_string_lossy().into_owned(),
            },
            agent: Some(stream),
        }))
    }
}

struct FakeInstance {
    child: Mutex<Child>,
    receipt: Receipt,
    defaults: CommandDefaults,
    agent: Option<UnixStream>,
}

impl BoxInstance for FakeInstance {
    fn kind(&self) -> BackendKind {
        BackendKind::Native
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
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(BoxEnd {
                reason: format!("the fake agent ended ({status})"),
            }),
            Err(e) => Some(BoxEnd {
                reason: format!("the fake agent cannot be waited for: {e}"),
            }),
        }
    }

    fn usage(&mut self) -> Result<Usage, BackendError> {
        Ok(Usage::default())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn set_egress(&mut self, _: &Egress) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            kind: BackendKind::Native,
            what: "change its network policy",
            why: "the fake backend has no network layer".into(),
        })
    }

    fn kill(self: Box<Self>) {}
}

impl Drop for FakeInstance {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}
