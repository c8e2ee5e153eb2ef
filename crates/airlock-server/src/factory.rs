//! The session manager's [`BoxFactory`]: each session's box is a [`RemoteSandbox`] held by its
//! own `airlock sandbox-host` process, started under the policy carried in the session's spec.

use crate::spawner::Spawner;
use airlock_policy::ResolvedPolicy;
use airlock_runtime::sessions::{BoxFactory, SessionSpec};
use airlock_runtime::{RemoteSandbox, SandboxOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The box of one running session.
pub struct BoxHandle {
    id: String,
    sandbox: RemoteSandbox,
}

impl BoxHandle {
    /// The box itself (exec, files).
    pub fn sandbox(&mut self) -> &mut RemoteSandbox {
        &mut self.sandbox
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
        NativeFactory { spawner, init_pids: Arc::new(Mutex::new(HashMap::new())), network_dir }
    }

    /// The init pids of running boxes, by session id (shared, updated as boxes start and stop).
    pub fn init_pids(&self) -> Arc<Mutex<HashMap<String, i32>>> {
        Arc::clone(&self.init_pids)
    }
}

impl BoxFactory for NativeFactory {
    type Handle = BoxHandle;

    fn start(&self, id: &str, spec: &SessionSpec) -> Result<BoxHandle, String> {
        let policy: ResolvedPolicy = serde_json::from_value(spec.payload.clone())
            .map_err(|e| format!("the session's policy cannot be read back ({e}); create the sandbox again"))?;
        let opts = SandboxOptions { audit: Some(crate::network_audit::audit_path(&self.network_dir, id)) };
        let sandbox = self.spawner.start(policy, opts).map_err(|e| format!("the box could not start: {e}"))?;
        self.init_pids.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), sandbox.init_pid());
        Ok(BoxHandle { id: id.to_string(), sandbox })
    }

    fn stop(&self, handle: BoxHandle) {
        self.init_pids.lock().unwrap_or_else(PoisonError::into_inner).remove(&handle.id);
        handle.sandbox.kill();
    }

    fn alive(&self, handle: &mut BoxHandle) -> bool {
        let pid = handle.sandbox.init_pid();
        // SAFETY: signal 0 delivers nothing; it only asks whether the (positive) pid exists.
        pid > 0 && unsafe { libc::kill(pid, 0) } == 0
    }
}
