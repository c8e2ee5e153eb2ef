//! `WasmBackend`: the WASM box behind the runtime's seam.

use crate::box_policy::{self, INSIDE_CACHE, INSIDE_RUNNER};
use crate::engine::MemoryStyle;
use crate::exec_map::{ExecMap, KILL_GRACE};
use crate::instance::{command_env, WasmInstance};
use crate::python::WasmDir;
use crate::python_files::{self, PythonError, PythonFiles};
use crate::receipt;
use crate::scope::Scope;
use airlock_policy::{BackendKind, ChangesMode, FilesystemPolicy, ResolvedPolicy};
use airlock_protocol::ExecRequest;
use airlock_runtime::attached::{run_over_agent, RunOptions, StdinMode};
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::{LayerStatus, Receipt, RunResult};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The WASM backend. Each box is a box of `confinement` (the native backend) whose commands
/// are WASI runs; `airlock_exe` is granted into it read-only to run them.
pub struct WasmBackend {
    confinement: Arc<dyn Backend>,
    airlock_exe: PathBuf,
    dir: WasmDir,
    /// CPython, compiled (per memory style) and unpacked on the host, once found (or made).
    python: Mutex<HashMap<MemoryStyle, PythonFiles>>,
}

/// What planning a box found: the native box's policy and receipt, and the memory layout its
/// runner can use.
struct Planned {
    inner: ResolvedPolicy,
    receipt: Receipt,
    style: MemoryStyle,
}

/// The layout a runner in a box with `confinement`'s receipt can use: wasmtime's reserved one,
/// unless the box caps memory any other way than a cgroup (an address-space rlimit, which would
/// refuse a 4 GiB reservation).
fn memory_style(confinement: &Receipt) -> MemoryStyle {
    let capped_otherwise = confinement
        .layers
        .iter()
        .any(|l| l.layer == airlock_runtime::MEMORY_LAYER && l.status != LayerStatus::Enforced);
    if capped_otherwise {
        MemoryStyle::Bounded
    } else {
        MemoryStyle::Reserved
    }
}

impl WasmBackend {
    /// A backend whose boxes run inside boxes of `confinement`, with CPython for WASI and the
    /// compiled cache in `dir`.
    pub fn new(confinement: Arc<dyn Backend>, airlock_exe: PathBuf, dir: WasmDir) -> WasmBackend {
        WasmBackend {
            confinement,
            airlock_exe,
            dir,
            python: Mutex::new(HashMap::new()),
        }
    }

    /// CPython for WASI, ready: checked against its pinned digest, compiled and its standard
    /// library unpacked into the cache the first time (a minute or so, once per wasmtime
    /// version).
    pub fn compiled_python(&self, style: MemoryStyle) -> Result<PythonFiles, BackendError> {
        let mut known = self.python.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = known.get(&style) {
            return Ok(p.clone());
        }
        let files =
            python_files::prepare(&self.dir, &self.airlock_exe, style).map_err(|e| match e {
                e @ (PythonError::Missing { .. } | PythonError::Digest { .. }) => {
                    BackendError::Unavailable {
                        kind: BackendKind::Wasm,
                        why: e.to_string(),
                    }
                }
                e => BackendError::Start(e.to_string()),
            })?;
        known.insert(style, files.clone());
        Ok(files)
    }

    /// Plans the native box a WASM box runs in, and the WASM box's own receipt around it.
    fn planned(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
    ) -> Result<Planned, BackendError> {
        let inner =
            box_policy::confinement_policy(policy, template, &self.airlock_exe, &self.dir.cache())?;
        let confinement = self.confinement.plan(&inner, &Template::Host)?;
        let style = memory_style(&confinement);
        let dirs = box_policy::preopens(policy, template);
        let receipt = receipt::receipt(
            policy,
            &dirs,
            self.dir.python().is_file(),
            style,
            confinement,
        );
        Ok(Planned {
            inner,
            receipt,
            style,
        })
    }

    fn exec_map(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        python: &PythonFiles,
        style: MemoryStyle,
    ) -> ExecMap {
        let inside = |p: &Path| Path::new(INSIDE_CACHE).join(p.file_name().unwrap_or_default());
        ExecMap {
            runner: INSIDE_RUNNER.into(),
            python: inside(&python.compiled),
            python_home: Some(inside(&python.home).to_string_lossy().into_owned()),
            dirs: box_policy::preopens(policy, template),
            memory: policy.limits.memory.map(guest_memory),
            timeout: policy.limits.timeout,
            memory_style: style,
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
        Ok(self.planned(policy, template)?.receipt)
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        box_policy::check(policy)?;
        let Planned {
            inner,
            receipt,
            style,
        } = self.planned(policy, template)?;
        let python = self.compiled_python(style)?;
        let map = self.exec_map(policy, template, &python, style);
        let scope = Scope::new(&map.dirs);
        let boxed = self.confinement.start(&inner, &Template::Host, opts)?;
        Ok(Box::new(WasmInstance::start(
            boxed, receipt, policy, template, map, scope,
        )?))
    }

    /// `airlock run`: the runner is the first and only process of a one-shot native box (the
    /// native supervisor's path: no agent, no sandbox-host, no relay), which is most of what
    /// makes a WASM start cheap. What that path cannot say the same way as a long-lived box —
    /// a refused command, `--control-fd`, a change layer — goes through the generic path, whose
    /// refusals are the same sentences as through the API.
    fn run_attached(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        argv: &[String],
        opts: &RunOptions,
    ) -> Result<RunResult, BackendError> {
        box_policy::check(policy)?;
        let Planned {
            mut inner,
            receipt,
            style,
        } = self.planned(policy, template)?;
        let python = self.compiled_python(style)?;
        let map = self.exec_map(policy, template, &python, style);
        let request = ExecRequest {
            argv: argv.to_vec(),
            env: command_env(policy, template),
            cwd: None,
            tty: None,
            stdin: opts.stdin == StdinMode::Auto,
            timeout_ms: None,
            tag: None,
            user: Default::default(),
        };
        let change_layer = policy.changes == ChangesMode::Apply
            && matches!(
                &policy.filesystem,
                FilesystemPolicy::Isolated {
                    workspace: Some(_),
                    ..
                }
            );
        let mapped = match map.map(&request) {
            Ok(m) if opts.control_fd.is_none() && !change_layer => m,
            _ => return run_over_agent(self, policy, template, argv, opts),
        };
        // The runner stops the module at the time limit itself and says so; the box's own
        // limit is the backstop a little later.
        inner.limits.timeout = policy.limits.timeout.map(|t| t + KILL_GRACE);
        let mut result =
            self.confinement
                .run_attached(&inner, &Template::Host, &mapped.argv, opts)?;
        result.receipt = receipt;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_layout_is_kept_unless_memory_is_capped_by_an_address_space_limit() {
        let mut receipt = Receipt::default();
        assert_eq!(memory_style(&receipt), MemoryStyle::Reserved);
        receipt.add(
            airlock_runtime::MEMORY_LAYER,
            LayerStatus::Enforced,
            "cgroup v1 memory limit",
            "256 MiB",
        );
        assert_eq!(memory_style(&receipt), MemoryStyle::Reserved);
        let mut rlimited = Receipt::default();
        rlimited.add(
            airlock_runtime::MEMORY_LAYER,
            LayerStatus::Fallback,
            "RLIMIT_AS",
            "256 MiB of address space per process",
        );
        assert_eq!(memory_style(&rlimited), MemoryStyle::Bounded);
    }
}
