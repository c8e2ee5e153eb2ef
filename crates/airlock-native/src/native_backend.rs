//! The native box behind the backend seam: namespaces, seccomp, Landlock and cgroups around
//! processes on the host kernel, each box held by its own `airlock sandbox-host` process.

use crate::plan::BoxPlan;
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::attached::RunOptions;
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::{Receipt, RunResult};
use std::path::PathBuf;

/// The native backend. `exe` is the airlock binary (it runs `exe sandbox-host` for each box).
/// Its boxes live on when it is dropped; each ends when its [`BoxInstance`] does.
pub struct NativeBackend {
    exe: PathBuf,
}

impl NativeBackend {
    pub fn new(exe: PathBuf) -> NativeBackend {
        NativeBackend { exe }
    }
}

/// The policy of `airlock check`'s trivial box: the defaults, no workspace.
pub fn probe_policy() -> Result<ResolvedPolicy, airlock_policy::PolicyError> {
    let file = airlock_policy::PolicyFile {
        workspace: Some("none".into()),
        ..Default::default()
    };
    let env = std::collections::BTreeMap::new();
    airlock_policy::resolve(
        &file,
        &airlock_policy::ResolveContext {
            cwd: "/".into(),
            env: &env,
            host: &airlock_runtime::RealHost,
        },
    )
}

fn check_template(template: &Template) -> Result<(), BackendError> {
    match template {
        Template::Host => Ok(()),
        Template::Image(t) => Err(BackendError::Invalid(format!(
            "the native backend cannot start template {:?} yet: only the host template is built",
            t.name
        ))),
    }
}

impl Backend for NativeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Native
    }

    fn probe(&self) -> Result<(), String> {
        let probe = probe_policy().map_err(|e| e.to_string())?;
        let instance = self
            .start(&probe, &Template::Host, &StartOptions::default())
            .map_err(|e| e.to_string())?;
        instance.kill();
        Ok(())
    }

    fn plan(&self, policy: &ResolvedPolicy, template: &Template) -> Result<Receipt, BackendError> {
        check_template(template)?;
        BoxPlan::new(policy, &["true".to_string()], &[])
            .map(|p| p.receipt)
            .map_err(|e| BackendError::Invalid(e.to_string()))
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        check_template(template)?;
        if policy.backend != BackendKind::Native {
            return Err(BackendError::Invalid(format!(
                "the policy asks for the {} backend, not native",
                policy.backend
            )));
        }
        Ok(Box::new(crate::starter_pool::start(
            &self.exe, policy, opts,
        )?))
    }

    /// The native box supervises a one-shot command itself (no agent, no sandbox-host: the
    /// command is the box's first process), which is what makes `airlock run` start in a few
    /// milliseconds.
    fn run_attached(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        argv: &[String],
        opts: &RunOptions,
    ) -> Result<RunResult, BackendError> {
        check_template(template)?;
        crate::run(policy, argv, opts).map_err(|e| BackendError::Run(e.to_string()))
    }
}
