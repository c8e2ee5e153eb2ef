//! The two halves of the seam: a [`Backend`] starts boxes, a [`BoxInstance`] is one running box.

use super::{ApprovalAnswerer, ApprovalSink, BackendError, NetworkEvent, Template, Usage};
use crate::attached::RunOptions;
use crate::{Receipt, RunResult};
use airlock_policy::{ApprovalAnswer, BackendKind, Egress, ResolvedPolicy};
use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Receives a box's network decisions as they happen (from any thread).
pub trait NetworkSink: Send + Sync {
    fn network_event(&self, event: NetworkEvent);
}

/// What a start needs beyond the policy and the template.
#[derive(Clone, Default)]
pub struct StartOptions {
    /// Where the box's network decisions go, as typed events.
    pub network_events: Option<Arc<dyn NetworkSink>>,
    /// Also append each decision to this JSON-lines file (the CLI's `--audit`).
    pub audit_file: Option<PathBuf>,
    /// Where the box's held connections are asked about (approval `on-request` with no
    /// approver program): the owner answers them with [`BoxInstance::answer_approval`].
    /// `None`: nobody but an approver program the policy names.
    pub approvals: Option<Arc<dyn ApprovalSink>>,
}

/// What every command in the box starts with, unless told otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandDefaults {
    pub env: BTreeMap<String, String>,
    pub cwd: String,
}

/// How a box ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxEnd {
    /// A sentence saying why (the agent ended, the box was killed, its host side went away).
    pub reason: String,
}

/// The optional abilities of a running box; each one a box lacks, it says so here, and the
/// matching method answers [`BackendError::Unsupported`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    /// `set_egress` can replace the allowlist of a running box (proxied boxes).
    pub live_egress: bool,
    /// `pause`/`resume` stop and continue the box in place, its memory kept resident.
    pub pause: bool,
    /// What [`BoxInstance::checkpoint`] can keep, or `None` when it cannot checkpoint at all.
    pub checkpoint: Option<CheckpointKind>,
    /// The box spends CPU even while nothing runs in it (gVisor's Sentry does), and
    /// [`BoxInstance::park`] can stop that while it waits unclaimed in a pool. `false`: an idle
    /// box costs nothing, or nothing can stop it; `park` has nothing to do.
    #[serde(default)]
    pub park: bool,
}

/// What a checkpoint keeps of a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// Memory, processes and files: a restored box continues where it was.
    Memory,
    /// Only the box's own writable files (its writable layer, its scratch and home): a restored
    /// box starts its processes anew.
    Files,
}

/// How to take a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckpointOptions {
    /// End the box once its state is written (a pause that gives its memory back), instead of
    /// letting it run on.
    pub then_stop: bool,
}

/// What a checkpoint wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    pub kind: CheckpointKind,
    /// How it was taken, for receipts and logs (`qemu-migration`, `runsc-checkpoint`, `files`).
    pub mechanism: String,
}

/// A kind of box. Implementations live in their own crates; the runtime only knows the seam.
pub trait Backend: Send + Sync {
    /// Which kind this is.
    fn kind(&self) -> BackendKind;

    /// Whether this host can run the kind, and if not, why (`airlock check`). May start a trivial
    /// box to find out.
    fn probe(&self) -> Result<(), String>;

    /// Why this backend would refuse every box for this process (its user, its host), found
    /// quickly and without side effects, or `None` when it might start one. A server asks
    /// before it accepts a request for the kind, so the refusal reaches the client as its own
    /// (400) rather than as a box that failed to start (500). Not a promise: [`Backend::probe`]
    /// is the real test.
    fn refusal(&self) -> Option<BackendError> {
        None
    }

    /// What a box of this kind would enforce for `policy` on this host. No side effects.
    fn plan(&self, policy: &ResolvedPolicy, template: &Template) -> Result<Receipt, BackendError>;

    /// Starts a box whose init is airlock's agent. Blocking; callable from any thread.
    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError>;

    /// Starts a box from a checkpoint that [`BoxInstance::checkpoint`] wrote into `dir` for a box
    /// of this kind with the same policy and template, possibly in another process (after a
    /// server restart). May be called many times on one checkpoint (a fork): each box gets its
    /// own copy of the writable state, and `dir` is never changed. The caller (the store) has
    /// already checked the checkpoint's integrity; a backend still refuses files it cannot parse
    /// rather than trusting them.
    fn restore(
        &self,
        dir: &Path,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        let _ = (dir, policy, template, opts);
        Err(BackendError::Unsupported {
            kind: self.kind(),
            what: "restore a checkpoint",
            why: "this backend has no checkpoints yet".into(),
        })
    }

    /// Runs one command in a new box, attached to airlock's own stdio (`airlock run`), and ends
    /// the box. The default runs it through the box's agent ([`run_over_agent`]); a backend with a
    /// faster one-shot path overrides it. An error is airlock's own failure (exit 125).
    ///
    /// [`run_over_agent`]: crate::attached::run_over_agent
    fn run_attached(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        argv: &[String],
        opts: &RunOptions,
    ) -> Result<RunResult, BackendError> {
        crate::attached::run_over_agent(self, policy, template, argv, opts)
    }
}

/// One running box. Dropping it (or [`BoxInstance::kill`]) ends the box and frees everything it
/// holds on the host.
pub trait BoxInstance: Send {
    /// The kind of box.
    fn kind(&self) -> BackendKind;

    /// What this box enforces.
    fn receipt(&self) -> &Receipt;

    /// The environment and working directory commands start with.
    fn command_defaults(&self) -> CommandDefaults;

    /// The connection to the box's agent, a byte stream speaking the agent protocol, its hello
    /// already exchanged (the backend checked that the agent is up and speaks our version).
    /// Given once.
    fn take_agent_stream(&mut self) -> Option<UnixStream>;

    /// How the box ended, or `None` while it runs. Quick: no I/O beyond a non-blocking check.
    fn ended(&self) -> Option<BoxEnd>;

    /// Waits up to `timeout` for the box to end; how it ended, or `None` if it still runs.
    fn wait_ended(&self, timeout: std::time::Duration) -> Option<BoxEnd> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(end) = self.ended() {
                return Some(end);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep((deadline - now).min(std::time::Duration::from_millis(5)));
        }
    }

    /// What the box uses now.
    fn usage(&mut self) -> Result<Usage, BackendError>;

    /// The box's optional abilities.
    fn capabilities(&self) -> Capabilities;

    /// Replaces the egress allowlist for the connections that follow.
    fn set_egress(&mut self, egress: &Egress) -> Result<(), BackendError>;

    /// Returns once every network event recorded before the call has reached the sink given at
    /// start (the proxy records a refusal before the box hears of it, so after the box reported
    /// one, this makes its event visible). Backends that deliver events synchronously need
    /// nothing here.
    fn flush_network_events(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Answers held connection `id` (a request the start's [`ApprovalSink`] was given) in
    /// `by`'s name. [`BackendError::Invalid`]: the answer cannot be applied (a bad time to live,
    /// scope `save`); [`BackendError::NotPending`]: `id` is not waiting (answered, timed out,
    /// or never asked).
    fn answer_approval(
        &mut self,
        id: u64,
        answer: &ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        let _ = (id, answer, by);
        Err(BackendError::Unsupported {
            kind: self.kind(),
            what: "answer a held connection",
            why: "this backend cannot ask its owner about connections yet".into(),
        })
    }

    /// A handle that answers held connections as [`BoxInstance::answer_approval`] does, from
    /// any thread and without this box (`None`: this backend cannot).
    fn approval_answerer(&self) -> Option<Arc<dyn ApprovalAnswerer>> {
        None
    }

    /// Stops every process of the box in place, keeping its memory.
    fn pause(&mut self) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            kind: self.kind(),
            what: "pause",
            why: "this backend has no pause yet".into(),
        })
    }

    /// Continues a paused box.
    fn resume(&mut self) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            kind: self.kind(),
            what: "resume",
            why: "this backend has no pause yet".into(),
        })
    }

    /// Stops the box while it waits, unclaimed, in a pool (where [`Capabilities::park`] says an
    /// idle box spends CPU): nothing of it runs until [`BoxInstance::unpark`], its memory is
    /// kept, and ending it still works. Never seen by a user: a pool unparks a box before it
    /// hands it over. The default has nothing to do.
    fn park(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Continues a parked box.
    fn unpark(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Writes the box's state (memory where [`Capabilities::checkpoint`] says so, and its own
    /// writable files) into `dir`, an empty directory that the caller made for it, readable only
    /// by the caller's user, for a later [`Backend::restore`] or fork. The backend only writes
    /// files under `dir`; the caller makes the checkpoint atomic (it writes into a temporary
    /// directory and renames it) and records a digest of every file before it trusts any of
    /// them. The box runs on afterwards (paused boxes stay paused) unless `opts.then_stop`.
    fn checkpoint(
        &mut self,
        dir: &Path,
        opts: &CheckpointOptions,
    ) -> Result<Checkpoint, BackendError> {
        let _ = (dir, opts);
        Err(BackendError::Unsupported {
            kind: self.kind(),
            what: "take a checkpoint",
            why: "this backend has no checkpoints yet".into(),
        })
    }

    /// Ends the box and waits (bounded) until its host side has cleaned up.
    fn kill(self: Box<Self>);
}
