//! `WasmBackend`: the WASM box behind the runtime's seam.

use crate::box_policy::{self, INSIDE_CACHE, INSIDE_RUNNER};
use crate::exec_map::ExecMap;
use crate::instance::WasmInstance;
use crate::python::{WasmDir, PYTHON_SHA256};
use crate::scope::Scope;
use crate::{engine, receipt};
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::Receipt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The WASM backend. Each box is a box of `confinement` (the native backend) whose commands
/// are WASI runs; `airlock_exe` is granted into it read-only to run them.
pub struct WasmBackend {
    confinement: Arc<dyn Backend>,
    airlock_exe: PathBuf,
    dir: WasmDir,
    /// CPython's compiled module on the host, once found (or made).
    python: Mutex<Option<PathBuf>>,
}

impl WasmBackend {
    /// A backend whose boxes run inside boxes of `confinement`, with CPython for WASI and the
    /// compiled cache in `dir`.
    pub fn new(confinement: Arc<dyn Backend>, airlock_exe: PathBuf, dir: WasmDir) -> WasmBackend {
        WasmBackend {
            confinement,
            airlock_exe,
            dir,
            python: Mutex::new(None),
        }
    }

    /// CPython for WASI, compiled: checked against its pinned digest and compiled into the
    /// cache the first time (that takes a minute or so, once per wasmtime version).
    pub fn compiled_python(&self) -> Result<PathBuf, BackendError> {
        let mut known = self.python.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = known.as_ref() {
            return Ok(p.clone());
        }
        let module = self.dir.python();
        let bytes = std::fs::read(&module).map_err(|e| BackendError::Unavailable {
            kind: BackendKind::Wasm,
            why: format!(
                "CPython for WASI is not installed ({}: {e}); install it with `{}`",
                module.display(),
                self.dir.install_command()
            ),
        })?;
        let digest = engine::module_digest(&bytes);
        if digest != PYTHON_SHA256 {
            return Err(BackendError::Unavailable {
                kind: BackendKind::Wasm,
                why: format!(
                    "{} is not the pinned CPython for WASI (sha256 {digest}, expected {PYTHON_SHA256}); reinstall it with `{}`",
                    module.display(),
                    self.dir.install_command()
                ),
            });
        }
        let engine = engine::engine().map_err(|e| BackendError::Start(e.to_string()))?;
        let compiled = engine::ensure_compiled(&engine, &module, &digest, &self.dir.cache())
            .map_err(|e| BackendError::Start(e.to_string()))?;
        *known = Some(compiled.clone());
        Ok(compiled)
    }

    fn exec_map(&self, policy: &ResolvedPolicy, template: &Template, python: &Path) -> ExecMap {
        let name = python.file_name().map(PathBuf::from).unwrap_or_default();
        ExecMap {
            runner: INSIDE_RUNNER.into(),
            python: Path::new(INSIDE_CACHE).join(name),
            dirs: box_policy::preopens(policy, template),
            memory: policy.limits.memory.map(guest_memory),
            timeout: policy.limits.timeout,
        }
    }
}

/// Headroom left, under the box's memory limit, for the runner itself (wasmtime, the compiled
/// module, the guest's stacks), so a guest that asks for too much gets a failed allocation
/// from wasmtime's limiter before the box's own limit kills the runner.
const RUNNER_HEADROOM: u64 = 96 << 20;

/// The guest's linear-memory cap for a box limited to `limit` bytes.
fn guest_memory(limit: u64) -> u64 {
    limit.saturating_sub(RUNNER_HEADROOM).max(limit / 2)
}

impl Backend for WasmBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wasm
    }

    fn probe(&self) -> Result<(), String> {
        let module = self.dir.python();
        if !module.is_file() {
            return Err(format!(
                "CPython for WASI is not installed ({} is missing); install it with `{}`",
                module.display(),
                self.dir.install_command()
            ));
        }
        self.confinement
            .probe()
            .map_err(|e| format!("its confinement (a native box) cannot run: {e}"))
    }

    fn plan(&self, policy: &ResolvedPolicy, template: &Template) -> Result<Receipt, BackendError> {
        let inner =
            box_policy::confinement_policy(policy, template, &self.airlock_exe, &self.dir.cache())?;
        let confinement = self.confinement.plan(&inner, &Template::Host)?;
        let dirs = box_policy::preopens(policy, template);
        Ok(receipt::receipt(
            policy,
            &dirs,
            self.dir.python().is_file(),
            confinement,
        ))
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        box_policy::check(policy)?;
        let python = self.compiled_python()?;
        let inner =
            box_policy::confinement_policy(policy, template, &self.airlock_exe, &self.dir.cache())?;
        let receipt = self.plan(policy, template)?;
        let map = self.exec_map(policy, template, &python);
        let scope = Scope::new(&map.dirs);
        let boxed = self.confinement.start(&inner, &Template::Host, opts)?;
        Ok(Box::new(WasmInstance::start(
            boxed, receipt, policy, template, map, scope,
        )?))
    }
}
