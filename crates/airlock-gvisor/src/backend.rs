//! The gVisor backend behind the seam.

use crate::agent_files::AgentFiles;
use crate::bundle::BundlePlan;
use crate::layout::Layout;
use crate::receipt::{self, Facts};
use crate::runsc::{Platform, Runsc};
use airlock_native::HostProcess;
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::Receipt;
use std::path::{Path, PathBuf};

/// Which runsc and platform boxes use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GvisorConfig {
    /// The runsc binary (`--runsc PATH`); `None`: `runsc` on PATH.
    pub runsc: Option<PathBuf>,
    /// The platform; `None`: the best this runsc offers without virtualization.
    pub platform: Option<Platform>,
}

/// The gVisor backend. `exe` is the airlock binary (each box is held by `exe gvisor-host`).
pub struct GvisorBackend {
    exe: PathBuf,
    config: GvisorConfig,
    /// The runsc found on first use (finding it runs it twice: worth doing once).
    found: std::sync::OnceLock<Result<Runsc, String>>,
}

impl GvisorBackend {
    pub fn new(exe: PathBuf, config: GvisorConfig) -> GvisorBackend {
        GvisorBackend {
            exe,
            config,
            found: std::sync::OnceLock::new(),
        }
    }

    fn runsc(&self) -> Result<Runsc, BackendError> {
        self.found
            .get_or_init(|| {
                Runsc::find(self.config.runsc.as_deref(), self.config.platform)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(|why| BackendError::Unavailable {
                kind: BackendKind::Gvisor,
                why,
            })
    }

    /// runsc's version and platform, for `airlock check`.
    pub fn describe(&self) -> Result<String, String> {
        self.runsc()
            .map(|r| format!("{}, platform {}", r.version, r.platform))
            .map_err(|e| e.to_string())
    }
}

/// Why this user cannot run gVisor boxes, if they cannot.
fn root_needed() -> Option<BackendError> {
    // SAFETY: geteuid cannot fail.
    (unsafe { libc::geteuid() } != 0).then(|| BackendError::Unavailable {
        kind: BackendKind::Gvisor,
        why: "it needs root: airlock gives each gVisor box a private mount namespace, a host cgroup and (for --net proxy) a network namespace around runsc, and runsc's rootless mode can do none of these without host networking; run airlock as root, or use --backend native, which works unprivileged".into(),
    })
}

impl Backend for GvisorBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Gvisor
    }

    fn refusal(&self) -> Option<BackendError> {
        root_needed().or_else(|| self.runsc().err())
    }

    fn probe(&self) -> Result<(), String> {
        if let Some(e) = root_needed() {
            return Err(e.to_string());
        }
        let runsc = self.runsc().map_err(|e| e.to_string())?;
        let policy = airlock_native::probe_policy().map_err(|e| e.to_string())?;
        let policy = ResolvedPolicy {
            backend: BackendKind::Gvisor,
            ..policy
        };
        let instance = self
            .start(&policy, &Template::Host, &StartOptions::default())
            .map_err(|e| format!("{} ({}, platform {})", e, runsc.version, runsc.platform))?;
        instance.kill();
        Ok(())
    }

    fn plan(&self, policy: &ResolvedPolicy, template: &Template) -> Result<Receipt, BackendError> {
        let runsc = self.runsc()?;
        let agent = AgentFiles::of_this_process()
            .map_err(|e| BackendError::Start(format!("cannot find airlock's own files: {e}")))?;
        let plan = BundlePlan::new(policy, template, &agent, &Layout::fixed(), &[])
            .map_err(|e| BackendError::Invalid(e.to_string()))?;
        let cgroup = airlock_jail::cgroup::probe_writable().is_complete();
        receipt::receipt(
            policy,
            &Facts {
                runsc: &runsc,
                plan: &plan,
                template,
                cgroup,
                idmap_gap: None,
            },
        )
        .map_err(|e| BackendError::Invalid(e.to_string()))
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        self.start_from(None, policy, template, opts)
    }

    fn restore(
        &self,
        dir: &Path,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        self.start_from(Some(dir), policy, template, opts)
    }
}

impl GvisorBackend {
    /// Starts a box under `gvisor-host`, fresh or from the checkpoint in `from`.
    fn start_from(
        &self,
        from: Option<&Path>,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        if policy.backend != BackendKind::Gvisor {
            return Err(BackendError::Invalid(format!(
                "the policy asks for the {} backend, not gvisor",
                policy.backend
            )));
        }
        if let Some(e) = root_needed() {
            return Err(e);
        }
        // Found here, so a missing runsc is a clear error before any process starts, and
        // handed to the host process as found.
        let runsc = self.runsc()?;
        let resolved = serde_json::to_string(&runsc)
            .map_err(|e| BackendError::Start(format!("cannot describe runsc: {e}")))?;
        let host = HostProcess {
            subcommand: "gvisor-host",
            program: None,
            args: vec!["--resolved".into(), resolved.into()],
            kind: BackendKind::Gvisor,
            restore: from.map(Path::to_path_buf),
        };
        airlock_native::start_hosted(&self.exe, host, policy, template, opts)
    }
}
