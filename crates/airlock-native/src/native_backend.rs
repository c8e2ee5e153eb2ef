//! The native box behind the backend seam: namespaces, seccomp, Landlock and cgroups around
//! processes on the host kernel, each box held by its own host process (`airlock-sandbox-host`
//! or `airlock sandbox-host`: see [`crate::box_host`]).

use crate::hosted_box::HostProcess;
use crate::plan::BoxPlan;
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::attached::RunOptions;
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::{Receipt, RunResult};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The native backend. `exe` is the airlock binary (each box's host is the
/// `airlock-sandbox-host` beside it, or `exe sandbox-host`). Its boxes live on when it is
/// dropped; each ends when its [`BoxInstance`] does.
pub struct NativeBackend {
    exe: PathBuf,
    /// Which host process holds a box, chosen at the first start.
    host: OnceLock<HostProcess>,
}

impl NativeBackend {
    pub fn new(exe: PathBuf) -> NativeBackend {
        NativeBackend {
            exe,
            host: OnceLock::new(),
        }
    }

    /// The host process of this backend's boxes: the program beside airlock when it is from
    /// this build, else airlock's own subcommand (said once on stderr when a program is there
    /// but cannot be used).
    pub fn host_process(&self) -> &HostProcess {
        self.host.get_or_init(|| {
            let mut host = HostProcess::native();
            match crate::box_host::beside(&self.exe) {
                Ok(program) => host.program = program,
                Err(e) => eprintln!(
                    "airlock: {e}; native boxes are held by `{} sandbox-host` instead",
                    self.exe.display()
                ),
            }
            host
        })
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

/// `policy` on `template`: the template's tree as the box's root, its env and cwd as defaults.
fn on_template(
    policy: &ResolvedPolicy,
    template: &Template,
) -> Result<ResolvedPolicy, BackendError> {
    let mut policy = policy.clone();
    airlock_template::apply_template(&mut policy, template)
        .map_err(|e| BackendError::Invalid(e.to_string()))?;
    Ok(policy)
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
        let policy = on_template(policy, template)?;
        BoxPlan::new(&policy, &["true".to_string()], &[])
            .map(|p| p.receipt)
            .map_err(|e| BackendError::Invalid(e.to_string()))
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        let policy = &on_template(policy, template)?;
        if policy.backend != BackendKind::Native {
            return Err(BackendError::Invalid(format!(
                "the policy asks for the {} backend, not native",
                policy.backend
            )));
        }
        crate::starter_pool::start_hosted(
            &self.exe,
            self.host_process().clone(),
            policy,
            template,
            opts,
        )
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
        let policy = on_template(policy, template)?;
        crate::run(&policy, argv, opts).map_err(|e| BackendError::Run(e.to_string()))
    }
}
