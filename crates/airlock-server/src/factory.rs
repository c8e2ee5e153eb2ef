//! The session manager's [`BoxFactory`]: each session's box is a [`RemoteSandbox`] held by its
//! own `airlock sandbox-host` process, started under the policy carried in the session's spec.

use crate::e2b::boxstate::E2bBox;
use crate::spawner::Spawner;
use airlock_policy::ResolvedPolicy;
use airlock_runtime::sessions::{BoxFactory, SessionSpec};
use airlock_runtime::{
    AgentSession, CodeContext, Language, RemoteSandbox, SandboxError, SandboxOptions,
};
use std::collections::HashMap;
use std::path::PathBuf;
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
    pub session: AgentSession,
    pub ctx: CodeContext,
}

impl LiveContext {
    /// Starts a context on a new session of `sandbox`.
    pub fn start(
        sandbox: &RemoteSandbox,
        language: Language,
        cwd: Option<String>,
    ) -> Result<Arc<LiveContext>, SandboxError> {
        let mut session = sandbox.new_session();
        let ctx = session.create_context(language, cwd.as_deref())?;
        Ok(Arc::new(LiveContext {
            cwd,
            language,
            pid: ctx.pid,
            run: Mutex::new(ContextRun { session, ctx }),
        }))
    }

    /// Ends the context's process (an execution running in it ends with "context died").
    pub fn kill(&self, sandbox: &RemoteSandbox) {
        let _ = sandbox
            .new_session()
            .signal_process(self.pid, libc::SIGKILL);
    }
}

/// The box of one running session.
pub struct BoxHandle {
    id: String,
    sandbox: RemoteSandbox,
    /// The box's code interpreter contexts, by context id.
    contexts: HashMap<String, Arc<LiveContext>>,
    /// Numbers the contexts created by id-less requests (`ctx-1`, `ctx-2`, ...).
    next_context: u64,
    /// The E2B gateway's state of this box (its envd processes and watchers).
    e2b: Arc<E2bBox>,
}

impl BoxHandle {
    /// The box itself (exec, files).
    pub fn sandbox(&mut self) -> &mut RemoteSandbox {
        &mut self.sandbox
    }

    /// The box and its interpreter contexts, borrowed together.
    pub fn parts(&mut self) -> (&mut RemoteSandbox, &mut HashMap<String, Arc<LiveContext>>) {
        (&mut self.sandbox, &mut self.contexts)
    }

    /// The E2B gateway's state of this box.
    pub(crate) fn e2b(&self) -> Arc<E2bBox> {
        Arc::clone(&self.e2b)
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

/// Starts boxes with [`RemoteSandbox`]; remembers each running box's init pid.
pub struct NativeFactory {
    spawner: Spawner,
    init_pids: Arc<Mutex<HashMap<String, i32>>>,
    network_dir: PathBuf,
}

impl NativeFactory {
    /// `network_dir` receives each proxied box's network decisions (`<id>.jsonl`).
    pub fn new(spawner: Spawner, network_dir: PathBuf) -> NativeFactory {
        NativeFactory {
            spawner,
            init_pids: Arc::new(Mutex::new(HashMap::new())),
            network_dir,
        }
    }

    /// The init pids of running boxes, by session id (shared, updated as boxes start and stop).
    pub fn init_pids(&self) -> Arc<Mutex<HashMap<String, i32>>> {
        Arc::clone(&self.init_pids)
    }
}

impl BoxFactory for NativeFactory {
    type Handle = BoxHandle;

    fn start(&self, id: &str, spec: &SessionSpec) -> Result<BoxHandle, String> {
        let policy: ResolvedPolicy = serde_json::from_value(spec.payload.clone()).map_err(|e| {
            format!("the session's policy cannot be read back ({e}); create the sandbox again")
        })?;
        let opts = SandboxOptions {
            audit: Some(crate::network_audit::audit_path(&self.network_dir, id)),
        };
        let sandbox = self
            .spawner
            .start(policy, opts)
            .map_err(|e| format!("the box could not start: {e}"))?;
        self.init_pids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), sandbox.init_pid());
        Ok(BoxHandle {
            id: id.to_string(),
            sandbox,
            contexts: HashMap::new(),
            next_context: 0,
            e2b: Arc::default(),
        })
    }

    fn stop(&self, handle: BoxHandle) {
        self.init_pids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&handle.id);
        handle.sandbox.kill();
    }

    fn alive(&self, handle: &mut BoxHandle) -> bool {
        let pid = handle.sandbox.init_pid();
        // SAFETY: signal 0 delivers nothing; it only asks whether the (positive) pid exists.
        pid > 0 && unsafe { libc::kill(pid, 0) } == 0
    }
}
