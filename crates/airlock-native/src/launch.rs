//! Starting a box with everything around it: the plan, idmapped grants, the cgroup, the egress
//! proxy and its channel. Shared by one-shot runs and long-lived sandboxes.

use crate::idmapping::idmap_grants;
use crate::plan::BoxPlan;
use crate::proxy_channel::ProxyChannel;
use crate::sentinel::Sentinel;
use crate::RunError;
use airlock_jail::cgroup::BoxCgroup;
use airlock_jail::spawn::{spawn, BoxMain, ProxyListener, SpawnedBox, StdioFds};
use airlock_policy::ResolvedPolicy;
use airlock_proxy::server::{ProxyConfig, ProxyHandle};
use airlock_runtime::Receipt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a box is started from.
pub(crate) struct Launch<'a> {
    pub policy: &'a ResolvedPolicy,
    pub argv: &'a [String],
    pub audit: Option<&'a Path>,
    /// Told about every network decision as it happens.
    pub on_event: Option<airlock_proxy::audit::EventSink>,
    /// Who is asked about refused connections under approval `on-request` when the policy
    /// names no approver program (the terminal, the server); `None`: nobody else.
    pub asker: Option<airlock_proxy::approval::Asker>,
    pub sentinel: &'a Sentinel,
    pub extra_covers: &'a [PathBuf],
    /// The box may be paused later (a hosted box): its cgroup joins the freezer. One-shot runs
    /// never pause and skip it.
    pub pausable: bool,
}

/// A started box and what must be cleaned up after it.
pub(crate) struct Started {
    pub spawned: SpawnedBox,
    pub cgroup: Option<BoxCgroup>,
    pub proxy: Option<ProxyHandle>,
    /// The workspace's change layer (its upper directory), to apply once the box is gone.
    pub changes: Option<std::os::fd::OwnedFd>,
    pub receipt: Receipt,
    /// The box's hold on its template: the store refuses to remove it while this lives.
    pub _template_lease: Option<airlock_template::TemplateLease>,
}

impl Launch<'_> {
    /// Plans and starts the box. `after_spawn` runs right after the clone, success or not (to
    /// close the caller's copies of the box's descriptors).
    pub fn start(
        &self,
        main: BoxMain,
        stdio: StdioFds,
        after_spawn: impl FnOnce(),
    ) -> Result<Started, RunError> {
        let policy = self.policy;
        // Refused before the box starts (the approver itself starts with the proxy, after it).
        if policy.network == airlock_policy::NetworkMode::Proxy {
            airlock_proxy::approval::check_approver(&policy.egress.approval, self.asker.is_some())?;
        }
        let template_lease = match &policy.template {
            Some(t) => Some(
                airlock_template::hold(&t.rootfs).map_err(|e| RunError::Template(e.to_string()))?,
            ),
            None => None,
        };
        // Read once for the plan's probe and the box's cgroup (and its freezer).
        let cgroups = airlock_jail::cgroup::discovery();
        let mut plan = BoxPlan::with_cgroups(
            policy,
            self.argv,
            self.extra_covers,
            &cgroups.probe_writable(),
        )?;
        let layered = plan
            .spec
            .rootfs
            .as_ref()
            .is_some_and(|r| r.changes_layer().is_some());
        if layered && matches!(main, BoxMain::Serve { .. }) {
            // A long-lived box's workspace is read by the host between calls: applying at the
            // end would hide every change until then.
            return Err(RunError::ChangesNeedOneShot);
        }
        plan.spec.main = main;
        if let BoxMain::Serve { root, .. } = &mut plan.spec.main {
            // The box's root needs the box's own /proc (its mount namespace), and a second
            // process for a moment while it is made: a box capped at one process (its init,
            // the agent) has none to spare, and could run no root command anyway.
            let why_not = match (plan.spec.namespaces.mount, policy.limits.pids) {
                (false, _) => Some("this box has no mount namespace, so no root of its own"),
                (_, Some(n)) if n < 2 => {
                    Some("--pids 1 leaves the box no process for a root command")
                }
                _ => None,
            };
            *root &= why_not.is_none();
            crate::box_root::add_receipt_line(&mut plan.receipt, why_not, &plan.spec.ids);
        }
        let interceptor = crate::box_secrets::interceptor(policy)?;
        if let Some(i) = &interceptor {
            crate::box_secrets::extend_trust(plan.spec.rootfs.as_mut(), i)?;
        }
        let idmapped_trees = idmap_grants(&mut plan, policy.fail_if_unavailable)?;
        let audit = match (self.audit, &plan.egress) {
            (Some(path), Some(_)) => Some(
                crate::output_file::open_output(
                    path,
                    crate::output_file::OutputMode::Append,
                    &crate::output_file::box_writable_roots(policy),
                )
                .map_err(RunError::Audit)?,
            ),
            _ => None,
        };
        let mut channel = match &plan.egress {
            Some(_) => Some(ProxyChannel::new().map_err(RunError::Proxy)?),
            None => None,
        };
        if let Some(ch) = &channel {
            plan.spec.proxy_listener = Some(ProxyListener {
                port: crate::plan::PROXY_PORT,
                channel: ch.box_end(),
            });
        }
        let mut changes_channel = match layered {
            true => Some(ProxyChannel::new().map_err(RunError::ChangesChannel)?),
            false => None,
        };
        if let Some(ch) = &changes_channel {
            plan.spec.changes_channel = Some(ch.box_end());
        }
        let cgroup = match &plan.cgroup {
            Some(limits) => {
                let cg = BoxCgroup::create_unique_in(&cgroups, "airlock", limits, self.pausable)?;
                for p in cg.paths() {
                    self.sentinel.register_cgroup(&p);
                }
                Some(cg)
            }
            None => None,
        };
        // The box's init joins its cgroup itself where the kernel allows it (v1): no global
        // lock, so a box started after an idle spell is not 5-15 ms slower. Elsewhere the
        // supervisor places it before it runs.
        let join = match &cgroup {
            Some(cg) => cg.self_join_files()?,
            None => None,
        };
        plan.spec.cgroup_join = join
            .iter()
            .flatten()
            .map(std::os::fd::AsRawFd::as_raw_fd)
            .collect();
        let spawned = spawn(&plan.spec, stdio, |pid| match (&cgroup, &join) {
            (Some(cg), None) => cg.add_pid(pid).map_err(|e| e.to_string()),
            _ => Ok(()),
        });
        drop(join);
        plan.spec.cgroup_join.clear();
        after_spawn();
        drop(idmapped_trees);
        if let Some(ch) = channel.as_mut() {
            ch.close_box_end();
        }
        if let Some(ch) = changes_channel.as_mut() {
            ch.close_box_end();
        }
        let spawned = spawned?;
        if interceptor.is_some() {
            crate::box_secrets::protect_process();
        }
        // No layer means the box's setup failed: the status channel says why, and nothing
        // the box could write exists.
        let changes = changes_channel.and_then(|ch| ch.receive_fd());
        // The box's init made the proxy's listener inside its network namespace and sent it
        // here; the proxy serves it from this (host) side. No listener means setup failed: the
        // status channel says why.
        let proxy = match (channel, plan.egress.take()) {
            (Some(ch), Some(egress)) => match ch.receive() {
                Some(listener) => {
                    let approval = match airlock_proxy::approval::gate_for(
                        &policy.egress.approval,
                        self.asker.clone(),
                    ) {
                        Ok(g) => g,
                        Err(e) => {
                            spawned.kill();
                            spawned.reap();
                            return Err(RunError::Approval(e));
                        }
                    };
                    let config = ProxyConfig {
                        rules: egress.rules,
                        max_connections: egress.max_connections,
                        byte_budget: egress.byte_budget,
                        connect_timeout: Duration::from_secs(30),
                        audit,
                        on_event: self.on_event.clone(),
                        intercept: interceptor,
                        approval,
                        peer_names: Some(crate::peer_process::namer(spawned.pid)),
                    };
                    match airlock_proxy::server::start(listener, config) {
                        Ok(p) => Some(p),
                        Err(e) => {
                            spawned.kill();
                            spawned.reap();
                            return Err(RunError::Proxy(e));
                        }
                    }
                }
                None => None,
            },
            _ => None,
        };
        Ok(Started {
            spawned,
            cgroup,
            proxy,
            changes,
            receipt: plan.receipt,
            _template_lease: template_lease,
        })
    }
}
