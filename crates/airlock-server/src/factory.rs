//! The session manager's [`BoxFactory`]: each session's box is a [`LiveSandbox`] started by the
//! backend its policy names, under the policy carried in the session's spec (or restored from a
//! snapshot: a fork, a resume), paused and resumed the way its kind can. Network decisions of
//! the box go straight into the store as typed events.
//!
//! How a pause maps onto the box's [`Capabilities`]:
//! - `memory: true`: a box that checkpoints its memory (microVM, gVisor) is checkpointed into
//!   the store and ended (its memory given back; resume restores it); a box that only freezes
//!   (native: the cgroup freezer) is frozen in place (CPU given back, memory resident), and if
//!   it can keep its files a files snapshot is taken too, so that it survives a server restart
//!   with its files (its processes then start anew).
//! - `memory: false`: a files checkpoint where the box has one (processes restart on resume),
//!   else its memory checkpoint (which keeps everything); a box that can only freeze refuses.
//!
//! [`Capabilities`]: airlock_runtime::backend::Capabilities

use crate::network_audit::StoreNetworkSink;
use crate::observer::SharedStore;
use crate::service::snapshots::SnapshotService;
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::backend::{Backend, Backends, CheckpointKind, StartOptions, Template};
use airlock_runtime::{AgentChannel, CodeContext, Language, LiveSandbox, SandboxError};
use airlock_sessions::{BoxFactory, Paused, SessionSpec};
use airlock_store::SnapshotPurpose;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One code interpreter context of a box, with what it was started with (for restarts). It has
/// its own session on the box, so code runs without holding the box's handle: other calls on the
/// box, and a kill, never wait for an execution. Executions in one context take turns (`run`).
pub struct LiveContext {
    pub cwd: Option<String>,
    pub language: Language,
    /// The context's driver process (to end it while an execution holds `run`).
    pub pid: i32,
    pub run: Mutex<ContextRun>,
}

/// What an execution needs, held for its whole length.
pub struct ContextRun {
    pub session: AgentChannel,
    pub ctx: CodeContext,
}

impl LiveContext {
    /// Starts a context on a new session of `sandbox`.
    pub fn start(
        sandbox: &LiveSandbox,
        language: Language,
        cwd: Option<String>,
    ) -> Result<Arc<LiveContext>, SandboxError> {
        let mut session = sandbox.new_channel();
        let ctx = session.create_context(language, cwd.as_deref())?;
        Ok(Arc::new(LiveContext {
            cwd,
            language,
            pid: ctx.pid,
            run: Mutex::new(ContextRun { session, ctx }),
        }))
    }

    /// Ends the context's process (an execution running in it ends with "context died").
    pub fn kill(&self, sandbox: &LiveSandbox) {
        let _ = sandbox
            .new_channel()
            .signal_process(self.pid, libc::SIGKILL);
    }
}

/// The box of one running session.
pub struct BoxHandle {
    sandbox: LiveSandbox,
    /// The box's code interpreter contexts, by context id.
    contexts: HashMap<String, Arc<LiveContext>>,
    /// Numbers the contexts created by id-less requests (`ctx-1`, `ctx-2`, ...).
    next_context: u64,
}

impl BoxHandle {
    /// A handle on a box with no contexts yet.
    pub fn new(sandbox: LiveSandbox) -> BoxHandle {
        BoxHandle {
            sandbox,
            contexts: HashMap::new(),
            next_context: 0,
        }
    }

    /// The number the last id-less context got.
    pub fn next_context(&self) -> u64 {
        self.next_context
    }

    /// Continues numbering id-less contexts after `n` (a box restored from a snapshot).
    pub fn set_next_context(&mut self, n: u64) {
        self.next_context = n;
    }

    /// The box itself (exec, files).
    pub fn sandbox(&mut self) -> &mut LiveSandbox {
        &mut self.sandbox
    }

    /// The box and its interpreter contexts, borrowed together.
    pub fn parts(&mut self) -> (&mut LiveSandbox, &mut HashMap<String, Arc<LiveContext>>) {
        (&mut self.sandbox, &mut self.contexts)
    }

    /// A fresh id for a new context.
    pub fn new_context_id(&mut self) -> String {
        loop {
            self.next_context += 1;
            let id = format!("ctx-{}", self.next_context);
            if !self.contexts.contains_key(&id) {
                return id;
            }
        }
    }
}

/// Notes kept at most (they answer the pause or resume that made them).
const MAX_NOTES: usize = 4096;

/// What the last pause or resume of a sandbox did, for the answer to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LifecycleNote {
    /// `memory` (processes continue where they were) or `files` (only files were kept).
    pub kept: &'static str,
    /// How: `cgroup-freezer`, `qemu-migration`, `files`, ...
    pub mechanism: String,
    /// Whether the box stays in host memory while paused.
    pub resident: bool,
    /// The snapshot holding its state, if one was taken.
    pub snapshot: Option<String>,
    /// A sentence saying what was kept and what a resume will do.
    pub message: String,
}

/// Starts each session's box with the backend its policy names.
pub struct SandboxFactory {
    backends: Backends,
    store: SharedStore,
    snapshots: Arc<SnapshotService>,
    notes: Mutex<HashMap<String, LifecycleNote>>,
    secrets: Arc<crate::held_secrets::HeldSecrets>,
    /// Ready boxes a matching start claims instead of starting one.
    pools: Arc<crate::pools::Pools>,
    approvals: Arc<crate::approvals::ServerApprovals>,
    denials: Arc<crate::denials::RecentDenials>,
}

impl SandboxFactory {
    /// Boxes are started with `backends`; their network decisions go into `store`, their
    /// snapshots into `snapshots`; the values of their secrets come from `secrets`.
    pub fn new(
        backends: Backends,
        store: SharedStore,
        snapshots: Arc<SnapshotService>,
        secrets: Arc<crate::held_secrets::HeldSecrets>,
    ) -> SandboxFactory {
        SandboxFactory {
            backends,
            store,
            snapshots,
            notes: Mutex::new(HashMap::new()),
            secrets,
            pools: Arc::new(crate::pools::Pools::none()),
            approvals: Arc::default(),
            denials: Arc::default(),
        }
    }

    /// Starts claim from `pools` where they match.
    pub fn with_pools(mut self, pools: Arc<crate::pools::Pools>) -> SandboxFactory {
        self.pools = pools;
        self
    }

    /// The server's pools.
    pub fn pools(&self) -> &Arc<crate::pools::Pools> {
        &self.pools
    }

    /// Held connections of boxes whose policy asks (approval `on-request`) are parked in
    /// `approvals` until answered over the API.
    pub fn with_approvals(mut self, approvals: Arc<crate::approvals::ServerApprovals>) -> Self {
        self.approvals = approvals;
        self
    }

    /// Each box's refusals are also kept in `denials` (the latest, for the sandbox's view).
    pub fn with_denials(mut self, denials: Arc<crate::denials::RecentDenials>) -> Self {
        self.denials = denials;
        self
    }

    /// The snapshots of the server's boxes.
    pub fn snapshots(&self) -> &Arc<SnapshotService> {
        &self.snapshots
    }

    /// What the last pause or resume of sandbox `id` did.
    pub fn note(&self, id: &str) -> Option<LifecycleNote> {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    fn set_note(&self, id: &str, note: LifecycleNote) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        // Notes only answer the request that made them: keep the map small.
        if notes.len() >= MAX_NOTES {
            notes.clear();
        }
        notes.insert(id.to_string(), note);
    }

    /// The session's policy, with the values of its secrets while this process holds them,
    /// and the backend it names.
    fn policy_and_backend(
        &self,
        id: &str,
        spec: &SessionSpec,
    ) -> Result<(ResolvedPolicy, Arc<dyn Backend>), String> {
        let mut policy: ResolvedPolicy =
            serde_json::from_value(spec.payload.clone()).map_err(|e| {
                format!("the session's policy cannot be read back ({e}); create the sandbox again")
            })?;
        // The stored policy has no values; they are in this process's memory only, so a box
        // of an earlier run of the server has none and its proxy refuses to start.
        self.secrets.values(id).restore(&mut policy);
        let backend = self
            .backends
            .select(policy.backend)
            .map_err(|e| e.to_string())?;
        Ok((policy, backend))
    }

    fn start_options(&self, id: &str, policy: &ResolvedPolicy) -> StartOptions {
        let asks = policy.network == airlock_policy::NetworkMode::Proxy
            && policy.egress.approval.mode.asks_for_network();
        StartOptions {
            network_events: Some(Arc::new(StoreNetworkSink::new(
                Arc::clone(&self.store),
                id.to_string(),
                Arc::clone(&self.denials),
            ))),
            audit_file: None,
            approvals: asks.then(|| self.approvals.sink(id)),
        }
    }

    /// Checkpoints the box into a pause snapshot and ends it.
    // The error hands the (still running) box back, as `BoxFactory::pause` does.
    #[allow(clippy::result_large_err)]
    fn pause_saved(
        &self,
        id: &str,
        spec: &SessionSpec,
        mut handle: BoxHandle,
        kind: CheckpointKind,
    ) -> Result<Paused<BoxHandle>, (BoxHandle, String)> {
        match self.snapshots.take(
            id,
            &mut handle,
            &spec.payload,
            SnapshotPurpose::Pause,
            None,
            true,
        ) {
            Ok(rec) => {
                let message = match kind {
                    CheckpointKind::Memory => format!(
                        "its memory, processes and files were saved ({}, {} bytes) and the box ended, giving its memory back; a resume continues every process where it was",
                        rec.mechanism, rec.bytes
                    ),
                    CheckpointKind::Files => format!(
                        "its files were saved ({} bytes) and the box ended; a resume starts its processes anew on those files",
                        rec.bytes
                    ),
                };
                self.set_note(
                    id,
                    LifecycleNote {
                        kept: kind_name(kind),
                        mechanism: rec.mechanism,
                        resident: false,
                        snapshot: Some(rec.id),
                        message,
                    },
                );
                handle.sandbox.kill();
                // Its proxy ended with it, and every connection it held.
                self.approvals.forget(id);
                Ok(Paused::Saved)
            }
            Err(e) => Err((handle, e)),
        }
    }
}

fn kind_name(kind: CheckpointKind) -> &'static str {
    match kind {
        CheckpointKind::Memory => "memory",
        CheckpointKind::Files => "files",
    }
}

impl BoxFactory for SandboxFactory {
    type Handle = BoxHandle;

    fn start(&self, id: &str, spec: &SessionSpec) -> Result<BoxHandle, String> {
        let (policy, backend) = self.policy_and_backend(id, spec)?;
        let opts = self.start_options(id, &policy);
        if let Some(snapshot) = &spec.restore {
            // A fork: a new box from another sandbox's snapshot (the snapshot stays).
            let _creating = self.pools.creating();
            return self
                .snapshots
                .restore(snapshot, backend.as_ref(), &spec.payload, &policy, &opts)
                .map(|r| r.handle);
        }
        if let Some(sink) = opts.network_events.clone() {
            // A ready box of a matching pool, made this sandbox's; else one started for it.
            if let Some(sandbox) = self.pools.claim(id, &policy, sink) {
                return Ok(BoxHandle::new(sandbox));
            }
        }
        let _creating = self.pools.creating();
        let sandbox = LiveSandbox::start(
            backend.as_ref(),
            &policy,
            &Template::of_policy(&policy),
            &opts,
        )
        .map_err(|e| format!("the box could not start: {e}"))?;
        Ok(BoxHandle::new(sandbox))
    }

    fn pause(
        &self,
        id: &str,
        spec: &SessionSpec,
        mut handle: BoxHandle,
        memory: bool,
    ) -> Result<Paused<BoxHandle>, (BoxHandle, String)> {
        let caps = handle.sandbox.capabilities();
        let backend = backend_of(spec);
        let kind = backend.map_or_else(|| "this".into(), |b| b.to_string());
        match (memory, caps.checkpoint, caps.pause) {
            (true, Some(CheckpointKind::Memory), _) | (false, Some(CheckpointKind::Memory), _) => {
                self.pause_saved(id, spec, handle, CheckpointKind::Memory)
            }
            (true, checkpoint, true) => {
                // Kept on disk too (before the freeze: a frozen box's files are still, but its
                // agent is frozen as well), so that the box survives a server restart.
                let files = match checkpoint {
                    Some(CheckpointKind::Files) => self
                        .snapshots
                        .take(id, &mut handle, &spec.payload, SnapshotPurpose::Pause, None, false)
                        .ok(),
                    _ => None,
                };
                if let Err(e) = handle.sandbox.pause() {
                    if let Some(f) = &files {
                        self.snapshots.delete(&f.id);
                    }
                    return Err((handle, e.to_string()));
                }
                let message = match &files {
                    Some(f) => format!(
                        "its processes are frozen in place (CPU given back, memory resident) and resume where they were; its files were also saved ({} bytes), so after a server restart it resumes with its files but its processes start anew",
                        f.bytes
                    ),
                    None => "its processes are frozen in place (CPU given back, memory resident) and resume where they were; it does not outlive the server".to_string(),
                };
                self.set_note(
                    id,
                    LifecycleNote {
                        kept: "memory",
                        mechanism: in_place_mechanism(backend).into(),
                        resident: true,
                        snapshot: files.map(|f| f.id),
                        message,
                    },
                );
                Ok(Paused::Resident(handle))
            }
            (_, Some(CheckpointKind::Files), _) => {
                self.pause_saved(id, spec, handle, CheckpointKind::Files)
            }
            (false, None, true) => Err((
                handle,
                format!(
                    "a {kind} box cannot give its memory back: it can only be frozen in place; pause it with memory: true"
                ),
            )),
            (_, None, false) => Err((
                handle,
                format!("a {kind} box can neither be frozen nor checkpointed on this host"),
            )),
        }
    }

    fn resume(
        &self,
        id: &str,
        spec: &SessionSpec,
        resident: Option<BoxHandle>,
    ) -> Result<BoxHandle, (Option<BoxHandle>, String)> {
        if let Some(mut handle) = resident {
            if let Err(e) = handle.sandbox.resume() {
                return Err((Some(handle), e.to_string()));
            }
            self.snapshots.delete_pause_snapshots(id);
            self.set_note(
                id,
                LifecycleNote {
                    kept: "memory",
                    mechanism: in_place_mechanism(backend_of(spec)).into(),
                    resident: true,
                    snapshot: None,
                    message: "thawed: every process continues where it was".into(),
                },
            );
            return Ok(handle);
        }
        let Some(snapshot) = self.snapshots.pause_snapshot(id) else {
            return Err((
                None,
                "no snapshot of its pause is left (it was deleted); kill the sandbox".into(),
            ));
        };
        // The policy with the secrets' values this process holds: the restored box's proxy
        // needs them as much as a new one's.
        let (policy, backend) = self.policy_and_backend(id, spec).map_err(|e| (None, e))?;
        let opts = self.start_options(id, &policy);
        let restored = self
            .snapshots
            .restore(
                &snapshot.id,
                backend.as_ref(),
                &spec.payload,
                &policy,
                &opts,
            )
            .map_err(|e| (None, e))?;
        let message = if restored.record.kind == "memory" {
            format!(
                "restored from its memory snapshot ({}): every process continues where it was",
                restored.record.mechanism
            )
        } else {
            "restored from its files snapshot: its files are as they were, its processes started anew (memory was not kept)".to_string()
        };
        self.set_note(
            id,
            LifecycleNote {
                kept: if restored.record.kind == "memory" {
                    "memory"
                } else {
                    "files"
                },
                mechanism: restored.record.mechanism.clone(),
                resident: false,
                snapshot: Some(restored.record.id.clone()),
                message,
            },
        );
        self.snapshots.delete_pause_snapshots(id);
        Ok(restored.handle)
    }

    fn stop(&self, handle: BoxHandle) {
        handle.sandbox.kill();
    }

    fn alive(&self, handle: &mut BoxHandle) -> bool {
        handle.sandbox.ended().is_none()
    }
}

/// The kind of box `spec` makes (`None`: its policy does not parse).
fn backend_of(spec: &SessionSpec) -> Option<BackendKind> {
    serde_json::from_value::<ResolvedPolicy>(spec.payload.clone())
        .map(|p| p.backend)
        .ok()
}

/// How a box of kind `backend` is stopped in place: the cgroup freezer (a native box, and a
/// WASM one, whose runtime runs in one); `runsc pause` then the freezer around the Sentry
/// (gVisor: runsc's pause alone leaves the Sentry spending CPU); QEMU's `stop` (a microVM).
fn in_place_mechanism(backend: Option<BackendKind>) -> &'static str {
    match backend {
        Some(BackendKind::Gvisor) => "runsc-pause+cgroup-freezer",
        Some(BackendKind::Microvm) => "qemu-stop",
        _ => "cgroup-freezer",
    }
}
