//! The session manager's [`BoxFactory`]: each session's box is a [`LiveSandbox`] started by the
//! backend its policy names, under the policy carried in the session's spec. Network decisions
//! of the box go straight into the store as typed events.

use crate::network_audit::StoreNetworkSink;
use crate::observer::SharedStore;
use airlock_policy::ResolvedPolicy;
use airlock_runtime::backend::{Backends, StartOptions, Template};
use airlock_runtime::{AgentChannel, CodeContext, Language, LiveSandbox, SandboxError};
use airlock_sessions::{BoxFactory, SessionSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

/// Starts each session's box with the backend its policy names.
pub struct SandboxFactory {
    backends: Backends,
    store: SharedStore,
    secrets: Arc<crate::held_secrets::HeldSecrets>,
}

impl SandboxFactory {
    /// Boxes are started with `backends`; their network decisions go into `store`; the values
    /// of their secrets come from `secrets`.
    pub fn new(
        backends: Backends,
        store: SharedStore,
        secrets: Arc<crate::held_secrets::HeldSecrets>,
    ) -> SandboxFactory {
        SandboxFactory {
            backends,
            store,
            secrets,
        }
    }
}

impl BoxFactory for SandboxFactory {
    type Handle = BoxHandle;

    fn start(&self, id: &str, spec: &SessionSpec) -> Result<BoxHandle, String> {
        let mut policy: ResolvedPolicy =
            serde_json::from_value(spec.payload.clone()).map_err(|e| {
                format!("the session's policy cannot be read back ({e}); create the sandbox again")
            })?;
        // The stored policy has no values: a box started again later (after a restart of the
        // server) has none and its proxy refuses to start rather than send placeholders.
        self.secrets.take(id).restore(&mut policy);
        let backend = self
            .backends
            .select(policy.backend)
            .map_err(|e| e.to_string())?;
        let opts = StartOptions {
            network_events: Some(Arc::new(StoreNetworkSink::new(
                Arc::clone(&self.store),
                id.to_string(),
            ))),
            audit_file: None,
        };
        let sandbox = LiveSandbox::start(
            backend.as_ref(),
            &policy,
            &Template::of_policy(&policy),
            &opts,
        )
        .map_err(|e| format!("the box could not start: {e}"))?;
        Ok(BoxHandle {
            sandbox,
            contexts: HashMap::new(),
            next_context: 0,
        })
    }

    fn stop(&self, handle: BoxHandle) {
        handle.sandbox.kill();
    }

    fn alive(&self, handle: &mut BoxHandle) -> bool {
        handle.sandbox.ended().is_none()
    }
}
