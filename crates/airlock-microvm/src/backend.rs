//! The microVM backend behind the seam.

use crate::box_plan::{self, BoxPlan};
use crate::guest_files::GuestFiles;
use crate::jail::{self, CoverKind, HostCover, VmmJail};
use crate::microvm_box::{MicrovmBox, Placeholders};
use crate::vm::{Accel, Vm, VmSpec};
use crate::{accel, boot, image, initramfs, snapshot, MicrovmError};
use airlock_microvm_guest::INIT_WAITING;
use airlock_policy::{BackendKind, ResolvedPolicy};
use airlock_runtime::backend::{Backend, BackendError, BoxInstance, StartOptions, Template};
use airlock_runtime::Receipt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many template snapshots (one per VM layout, ~90-170 MiB each) the cache keeps.
const WARM_KEEP: usize = 4;

/// The QEMU binary used unless `AIRLOCK_MICROVM_QEMU` names another.
const QEMU: &str = "qemu-system-x86_64";

/// The microVM backend: each box a QEMU `microvm` guest with its own kernel.
pub struct MicrovmBackend {
    dir: PathBuf,
    qemu: PathBuf,
    pool: crate::warm_pool::WarmPool,
}

/// A VM ready for its config, and how it got there.
struct Ready {
    vm: Vm,
    how: String,
}

impl MicrovmBackend {
    /// Guest files under `dir` (`target/microvm`: see `scripts/microvm-guest.sh`).
    pub fn new(dir: PathBuf) -> MicrovmBackend {
        let qemu = std::env::var_os("AIRLOCK_MICROVM_QEMU")
            .map_or_else(|| PathBuf::from(QEMU), PathBuf::from);
        MicrovmBackend {
            dir,
            qemu,
            pool: crate::warm_pool::WarmPool::default(),
        }
    }

    /// The guest files of an airlock at `airlock_exe` (`target/<profile>/airlock` →
    /// `target/microvm`), unless `AIRLOCK_MICROVM_DIR` names the directory.
    pub fn beside(airlock_exe: &Path) -> MicrovmBackend {
        let dir = std::env::var_os("AIRLOCK_MICROVM_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                airlock_exe
                    .parent()
                    .and_then(Path::parent)
                    .map_or_else(|| PathBuf::from("microvm"), |t| t.join("microvm"))
            });
        MicrovmBackend::new(dir)
    }

    fn files(&self) -> Result<GuestFiles, MicrovmError> {
        GuestFiles::find(&self.dir)
    }

    /// Plans the VM of a box: the guest files, the template's image, the policy as data.
    fn prepare(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
    ) -> Result<(GuestFiles, BoxPlan, VmSpec), MicrovmError> {
        let files = self.files()?;
        let image = match template {
            Template::Host => None,
            Template::Image(t) => {
                Some((image::cached(&files.cache, t)?, image::FSTYPE.to_string()))
            }
        };
        let plan = box_plan::plan(policy, template, image, &files.cache)?;
        let initramfs = initramfs::cached(&files)?;
        let spec = VmSpec {
            qemu: self.qemu.clone(),
            accel: Accel::Tcg,
            memory_mib: plan.memory_mib,
            vcpus: plan.vcpus,
            kernel: files.kernel.clone(),
            initramfs,
            shares: plan.shares.clone(),
            disk: plan.disk.clone(),
            jail: VmmJail::for_caller(plan.covers.clone(), jail::empties(&files.cache)?),
        };
        Ok((files, plan, spec))
    }

    /// The template snapshot of `spec`'s layout.
    fn warm_path(files: &GuestFiles, spec: &VmSpec) -> PathBuf {
        let digest =
            initramfs::hex(&<sha2::Sha256 as sha2::Digest>::digest(spec.layout().as_bytes())[..12]);
        files.cache.join("warm").join(format!("{digest}.vmstate"))
    }

    /// A VM waiting for its config: restored from the layout's template snapshot when there
    /// is one, else booted cold (and snapshotted at that point for the next box).
    fn ready_vm(files: &GuestFiles, spec: &VmSpec) -> Result<Ready, MicrovmError> {
        let warm = Self::warm_path(files, spec);
        if warm.is_file() {
            crate::cache::touch(&warm);
            let started = std::time::Instant::now();
            match boot::start_vm(spec, Some(snapshot::open(&warm)?)) {
                Ok(vm) => {
                    return Ok(Ready {
                        vm,
                        how: format!(
                            "restored from the template snapshot in {} ms (no boot)",
                            started.elapsed().as_millis()
                        ),
                    })
                }
                // A snapshot QEMU cannot load (another QEMU build) is replaced below.
                Err(_) => {
                    let _ = std::fs::remove_file(&warm);
                }
            }
        }
        let started = std::time::Instant::now();
        let mut vm = boot::start_vm(spec, None)?;
        wait_line(&mut vm, INIT_WAITING, boot::BOOT_TIMEOUT)?;
        let booted = started.elapsed();
        let saved = snapshot::save(&mut vm, &warm, false).is_ok();
        if let Some(dir) = warm.parent() {
            crate::cache::prune(dir, ".vmstate", WARM_KEEP);
        }
        Ok(Ready {
            vm,
            how: format!(
                "cold boot to the init in {} ms{}",
                booted.as_millis(),
                if saved {
                    "; saved as the template snapshot for the next box"
                } else {
                    ""
                }
            ),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        mut vm: Vm,
        configure: Option<&BoxPlan>,
        (files, plan, placeholders): (GuestFiles, BoxPlan, Placeholders),
        spec: &VmSpec,
        template: &Template,
        opts: &StartOptions,
        how: String,
        intercept: Option<std::sync::Arc<airlock_proxy::intercept::Interceptor>>,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        let holds_secrets = intercept.is_some();
        let mut approvals = None;
        let proxy = if plan.proxied {
            let egress = crate::egress::start(
                &airlock_policy_egress(&plan),
                opts,
                &plan.box_writable,
                intercept,
            )?;
            approvals = egress.pending;
            let proxy = egress.proxy;
            if holds_secrets {
                // This process's memory holds the values now: no core dump, no ptrace.
                airlock_native::protect_process();
            }
            if let Some(net) = vm.net.take() {
                crate::door::serve(net, proxy.local_addr()).map_err(|e| {
                    BackendError::Start(format!("cannot serve the box's network door: {e}"))
                })?;
            }
            Some(proxy)
        } else {
            None
        };
        let agent = match configure {
            Some(p) => boot::configure(&mut vm, &p.guest, boot::BOOT_TIMEOUT)?,
            None => vm
                .agent
                .take()
                .ok_or_else(|| BackendError::Start("the restored VM has no agent port".into()))?,
        };
        let accel = accel::AccelChoice {
            accel: spec.accel,
            why: accel::choose(spec, &files.cache).why,
        };
        let has_shares = !spec.shares.is_empty();
        let mut ctl = vm.ctl.take();
        if configure.is_none() {
            // Restored from a checkpoint: its clock is the checkpoint's, and its shares were
            // detached for the save.
            let port = ctl
                .as_mut()
                .ok_or_else(|| BackendError::Start("the restored VM has no control port".into()))?;
            crate::control::set_clock(port)?;
            if has_shares {
                crate::control::send(port, airlock_microvm_guest::CTL_ATTACH)?;
            }
        }
        Ok(Box::new(MicrovmBox {
            receipt: crate::receipt::receipt(&plan, template, &accel, &how),
            defaults: plan.defaults.clone(),
            agent: Some(agent),
            proxy,
            ctl,
            has_shares,
            holds_secrets,
            approvals,
            _placeholders: placeholders,
            vm,
        }))
    }
}

/// Makes the policy's missing protected paths (empty) on the host, so that QEMU's jail holds
/// them read-only and the guest binds them like the existing ones, and the box cannot create
/// them; they go with the box.
fn placeholders(
    policy: &ResolvedPolicy,
    plan: &mut BoxPlan,
    spec: &mut VmSpec,
) -> Result<Placeholders, BackendError> {
    let (made, covers) = airlock_native::create_placeholders(policy)
        .map_err(|e| BackendError::Start(e.to_string()))?;
    let placeholders = Placeholders(made);
    plan.guest
        .protect
        .extend(covers.iter().map(|c| c.to_string_lossy().into_owned()));
    let mounts = policy_mounts(policy);
    let mounts: Vec<(&Path, &Path)> = mounts
        .iter()
        .map(|(a, b)| (a.as_path(), b.as_path()))
        .collect();
    spec.jail.covers.extend(covers.iter().filter_map(|c| {
        box_plan::host_of(&mounts, c).map(|path| HostCover {
            path,
            kind: CoverKind::ReadOnly,
        })
    }));
    Ok(placeholders)
}

/// The (inside, host) pairs of a policy's workspace and grants.
fn policy_mounts(policy: &ResolvedPolicy) -> Vec<(PathBuf, PathBuf)> {
    match &policy.filesystem {
        airlock_policy::FilesystemPolicy::Isolated {
            workspace, grants, ..
        } => workspace
            .iter()
            .chain(grants.iter())
            .map(|m| (m.inside.clone(), m.host.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The egress of a planned box (kept on the plan's policy copy).
fn airlock_policy_egress(plan: &BoxPlan) -> airlock_policy::Egress {
    plan.egress.clone()
}

/// Reads the agent port up to `want`'s line (the init's `waiting`).
fn wait_line(vm: &mut Vm, want: &str, timeout: Duration) -> Result<(), MicrovmError> {
    let Some(port) = vm.agent.as_mut() else {
        return Err(MicrovmError::Boot(
            "the agent's port was already taken".into(),
        ));
    };
    port.set_read_timeout(Some(timeout))
        .map_err(|e| MicrovmError::io("cannot wait for the guest", e))?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match port.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => break,
            Ok(1) => line.push(byte[0]),
            Ok(_) => {
                return Err(MicrovmError::Boot(format!(
                    "the guest ended during boot: {}",
                    vm.console_tail()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                return Err(MicrovmError::Boot(format!(
                    "the guest did not reach airlock's init within {} s: {}",
                    timeout.as_secs(),
                    vm.console_tail()
                )))
            }
        }
    }
    let _ = port.set_read_timeout(None);
    let got = String::from_utf8_lossy(&line);
    if got.trim() != want {
        return Err(MicrovmError::Boot(format!(
            "the guest's init said {got:?} instead of {want:?}"
        )));
    }
    Ok(())
}

impl Backend for MicrovmBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Microvm
    }

    fn probe(&self) -> Result<(), String> {
        let files = self.files().map_err(|e| e.to_string())?;
        let initramfs = initramfs::cached(&files).map_err(|e| e.to_string())?;
        let spec = VmSpec {
            qemu: self.qemu.clone(),
            accel: Accel::Tcg,
            memory_mib: box_plan::DEFAULT_MEMORY_MIB,
            vcpus: 1,
            kernel: files.kernel.clone(),
            initramfs,
            shares: Vec::new(),
            disk: None,
            jail: VmmJail::for_caller(
                Vec::new(),
                jail::empties(&files.cache).map_err(|e| e.to_string())?,
            ),
        };
        let choice = accel::choose(&spec, &files.cache);
        let mut spec = spec;
        spec.accel = choice.accel;
        let vm = Self::ready_vm(&files, &spec).map_err(|e| e.to_string())?;
        vm.vm.kill();
        Ok(())
    }

    fn plan(&self, policy: &ResolvedPolicy, template: &Template) -> Result<Receipt, BackendError> {
        let (files, plan, spec) = self.prepare(policy, template)?;
        let choice = accel::choose(&spec, &files.cache);
        let how = if Self::warm_path(
            &files,
            &VmSpec {
                accel: choice.accel,
                ..spec.clone()
            },
        )
        .is_file()
        {
            "restore from the layout's template snapshot"
        } else {
            "cold boot (then saved as the template snapshot)"
        };
        Ok(crate::receipt::receipt(&plan, template, &choice, how))
    }

    fn restore(
        &self,
        dir: &Path,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        if !policy.secrets.is_empty() {
            // Never checkpointed (its capabilities say so): the CA its guest trusts is made
            // per box and is not kept.
            return Err(BackendError::Invalid(
                "a microvm box that holds secrets cannot be restored: its proxy's CA is made per box and is not in the checkpoint".into(),
            ));
        }
        let (files, mut plan, mut spec) = self.prepare(policy, template)?;
        spec.accel = accel::choose(&spec, &files.cache).accel;
        // The checkpointed box's placeholders went with it: made again before QEMU starts, so
        // its jail holds them and the guest binds them when it attaches the shares.
        let placeholders = placeholders(policy, &mut plan, &mut spec)?;
        let path = snapshot::in_checkpoint(dir);
        let vm = boot::start_vm(&spec, Some(snapshot::open(&path)?))?;
        self.finish(
            vm,
            None,
            (files, plan, placeholders),
            &spec,
            template,
            opts,
            format!("restored from the checkpoint {}", dir.display()),
            None,
        )
    }

    fn start(
        &self,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<Box<dyn BoxInstance>, BackendError> {
        if policy.backend != BackendKind::Microvm {
            return Err(BackendError::Invalid(format!(
                "the policy asks for the {} backend, not microvm",
                policy.backend
            )));
        }
        let (files, mut plan, mut spec) = self.prepare(policy, template)?;
        spec.accel = accel::choose(&spec, &files.cache).accel;
        // The box's secrets: its proxy holds them with a CA made for this box, whose
        // certificate (not its key) the guest adds to the box's trust bundle.
        let intercept = airlock_native::interceptor(policy)
            .map_err(|e| BackendError::Invalid(e.to_string()))?;
        if let Some(i) = &intercept {
            plan.guest.trust_ca = Some(i.ca_pem().to_string());
        }
        let placeholders = placeholders(policy, &mut plan, &mut spec)?;
        let ready = match self.pool.take(&spec) {
            Some(vm) => Ready {
                vm,
                how: "taken from the warm pool (restored ahead of time, no boot)".into(),
            },
            None => Self::ready_vm(&files, &spec)?,
        };
        {
            let (files, spec2) = (files.clone(), spec.clone());
            self.pool.refill(&spec, move || {
                let warm = Self::warm_path(&files, &spec2);
                let file = snapshot::open(&warm).ok()?;
                boot::start_vm(&spec2, Some(file)).ok()
            });
        }
        let plan_copy = plan.clone();
        self.finish(
            ready.vm,
            Some(&plan_copy),
            (files, plan, placeholders),
            &spec,
            template,
            opts,
            ready.how,
            intercept,
        )
    }
}
