//! Starting one gVisor box inside its host process, and the running box it becomes: the
//! bundle, the cgroup, the proxy door, runsc with the agent as init, the agent's hello.

use crate::agent_files::AgentFiles;
use crate::bundle::{BundlePlan, Prep};
use crate::layout::Layout;
use crate::netns::ProxyDoor;
use crate::protect::HostProtection;
use crate::receipt::{self, Facts};
use crate::relay::Relay;
use crate::runsc::{Runsc, RunscNetwork};
use airlock_jail::cgroup::{BoxCgroup, CgroupLimits};
use airlock_native::Sentinel;
use airlock_policy::{Egress, NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::{Capabilities, Template, Usage};
use airlock_runtime::{AgentClient, Receipt};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Where the gofer's own (root) creations are stored until it chowns them.
const NOBODY: u32 = 65534;
/// How long the agent may take to greet (the Sentry's start included).
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long runsc may take to end after the box is killed.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// Why the box did not start (a sentence for the owner).
#[derive(Debug)]
pub enum StartError {
    Refused(String),
}

fn refused(what: &str, e: impl std::fmt::Display) -> StartError {
    StartError::Refused(format!("{what}: {e}"))
}

/// What a start is made of.
pub struct BoxStart<'a> {
    runsc: &'a Runsc,
    policy: &'a ResolvedPolicy,
    template: &'a Template,
    audit: Option<PathBuf>,
    on_event: Option<airlock_proxy::audit::EventSink>,
    /// Who is asked about held connections when the policy names no approver program.
    asker: Option<airlock_proxy::approval::Asker>,
}

/// How runsc starts the box's sandbox.
pub(crate) enum Launch<'a> {
    /// `runsc run`: a fresh box whose agent greets.
    Run,
    /// `runsc restore` from the memory image in this directory: the agent continues where it
    /// was checkpointed, its hello long exchanged.
    Restore(&'a Path),
}

/// A running gVisor box, held by this (host) process.
pub struct RunningBox {
    pub receipt: Receipt,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    pub agent: Option<UnixStream>,
    pub(crate) runsc: Runsc,
    pub(crate) network: RunscNetwork,
    /// The container's name under runsc: a new one for each runsc start (a restore in place
    /// follows a checkpoint that removed the old one).
    pub(crate) id: String,
    pub(crate) generation: u32,
    pub(crate) layout: Layout,
    pub(crate) child: Option<Child>,
    pub(crate) pidfd: Option<OwnedFd>,
    /// The owner's connection relayed to the sandbox of the moment (boxes that can be
    /// checkpointed: the Sentry shuts its socket down when a checkpoint ends it).
    pub(crate) relay: Option<Relay>,
    /// The box was ended by a checkpoint asked to stop it.
    pub(crate) stopped: bool,
    pub(crate) paused: bool,
    /// The cgroup is frozen (a pause or a park): runsc, its Sentry and gofer stand still, and
    /// nothing may ask the Sentry anything until it is thawed.
    frozen: bool,
    /// The box's process count when it was frozen (`runsc ps` cannot ask a frozen Sentry).
    processes_when_frozen: Option<u64>,
    /// The network namespace runsc runs in (`--net proxy`).
    pub(crate) netns: Option<OwnedFd>,
    cgroup: Option<BoxCgroup>,
    proxy: Option<airlock_proxy::server::ProxyHandle>,
    /// The placeholders and host-side covers, released once runsc is gone.
    protection: Option<HostProtection>,
    sentinel: Option<Sentinel>,
}

/// What the box's limits ask of a host cgroup around runsc.
fn cgroup_limits(policy: &ResolvedPolicy) -> CgroupLimits {
    let l = &policy.limits;
    CgroupLimits {
        memory_bytes: l.memory,
        pids: l.pids.map(receipt::host_pids),
        cpus: l.cpus,
    }
}

fn prepare(prep: &[Prep]) -> std::io::Result<()> {
    let owner = |p: &Path, boxed: bool| -> std::io::Result<()> {
        if boxed {
            std::os::unix::fs::lchown(
                p,
                Some(airlock_policy::INSIDE_UID),
                Some(airlock_policy::INSIDE_GID),
            )?;
        }
        Ok(())
    };
    for step in prep {
        match step {
            Prep::Dir { path, mode, boxed } => {
                if !path.exists() {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o755)
                        .create(path)?;
                }
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))?;
                owner(path, *boxed)?;
            }
            Prep::File {
                path,
                contents,
                boxed,
            } => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                    owner(parent, *boxed)?;
                }
                if !path.exists() || !contents.is_empty() {
                    std::fs::write(path, contents)?;
                }
                owner(path, *boxed)?;
            }
            Prep::Symlink { path, target } => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                if path.symlink_metadata().is_err() {
                    std::os::unix::fs::symlink(target, path)?;
                }
            }
            Prep::Copy { source, path } => {
                if let Ok(data) = std::fs::read(source) {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::fs::write(path, data)?;
                }
            }
        }
    }
    Ok(())
}

/// Attaches the idmapped view of every grant (the caller's files shown as the box user's);
/// where this host cannot, plain binds, and why.
fn attach_views(plan: &BundlePlan) -> Result<Option<String>, StartError> {
    if plan.user_mounts.is_empty() {
        return Ok(None);
    }
    for m in &plan.user_mounts {
        let made = if m.host.is_dir() {
            std::fs::create_dir_all(&m.view)
        } else {
            std::fs::write(&m.view, b"")
        };
        made.map_err(|e| refused("cannot make a grant's mount point", e))?;
    }
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    // The caller's files show as the box user's. runsc's gofer creates files as host root and
    // then gives them the box user's ids, so root needs a mapping too: its new files are
    // briefly stored as nobody (65534) until that chown stores them as the caller's.
    let pairs = [(me, airlock_policy::INSIDE_UID), (NOBODY, 0)];
    let ns = airlock_jail::idmap::IdmapNamespace::mapping(&pairs);
    let idmapped = ns.and_then(|ns| {
        for m in &plan.user_mounts {
            let tree = airlock_jail::idmap::idmapped_tree(&m.host, &ns, !m.writable)?;
            airlock_jail::idmap::attach(tree.as_raw_fd(), &m.view)?;
        }
        Ok(())
    });
    match idmapped {
        Ok(()) => Ok(None),
        Err(e) => {
            for m in &plan.user_mounts {
                bind(&m.host, &m.view, !m.writable)
                    .map_err(|e| refused("cannot bind a grant", e))?;
            }
            Ok(Some(format!(
                "grants are not idmapped, so the box's user may not write them (idmapped mounts are unavailable here: {e})"
            )))
        }
    }
}

fn bind(source: &Path, target: &Path, read_only: bool) -> std::io::Result<()> {
    let s = CString::new(source.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let t = CString::new(target.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: valid C strings; a bind mount with no data.
    let rc = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    };
    if rc == -1 {
        return Err(std::io::Error::last_os_error());
    }
    if read_only {
        let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_REC;
        // SAFETY: remounting the bind we just made read-only.
        let rc = unsafe {
            libc::mount(
                std::ptr::null(),
                t.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            )
        };
        if rc == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The egress proxy's rules from the policy's allowlist.
pub fn egress_rules(e: &Egress) -> Result<airlock_proxy::rules::EgressRules, String> {
    airlock_proxy::rules::EgressRules::from_egress(e)
        .map_err(|e| format!("invalid network allowlist: {e}"))
}

impl<'a> BoxStart<'a> {
    pub fn new(
        runsc: &'a Runsc,
        policy: &'a ResolvedPolicy,
        template: &'a Template,
        audit: Option<PathBuf>,
        on_event: Option<airlock_proxy::audit::EventSink>,
    ) -> BoxStart<'a> {
        BoxStart {
            runsc,
            policy,
            template,
            audit,
            on_event,
            asker: None,
        }
    }

    /// Held connections are asked of `asker` (the box's owner) when the policy names no
    /// approver program.
    pub fn with_asker(mut self, asker: Option<airlock_proxy::approval::Asker>) -> BoxStart<'a> {
        self.asker = asker;
        self
    }

    /// Starts the box. Call once, from the single-threaded host process. On failure nothing
    /// is left: runsc is killed, the cgroup removed, and the tmpfs goes with this process.
    pub fn start(self) -> Result<RunningBox, StartError> {
        self.start_from(None)
    }

    /// Starts the box from the checkpoint that [`RunningBox::checkpoint`] wrote into `dir`:
    /// its writable files copied back, its memory restored by runsc, its agent continuing.
    pub fn restore(self, dir: &Path) -> Result<RunningBox, StartError> {
        crate::checkpoint::check(dir, self.runsc)
            .map_err(|e| StartError::Refused(e.to_string()))?;
        self.start_from(Some(dir))
    }

    fn start_from(self, from: Option<&Path>) -> Result<RunningBox, StartError> {
        let policy = self.policy;
        // The sentinel first, while this process has one thread: it removes the cgroup if
        // this process is killed.
        let sentinel =
            Sentinel::start().map_err(|e| refused("cannot start the cleanup sentinel", e))?;
        let layout = Layout::fixed();
        let agent_files = AgentFiles::of_this_process()
            .map_err(|e| refused("cannot find airlock's own executable and libraries", e))?;
        let interceptor =
            airlock_native::interceptor(policy).map_err(|e| StartError::Refused(e.to_string()))?;
        let extra = match &interceptor {
            Some(i) => vec![airlock_jail::rootfs::FsOp::ExtendFile {
                target: airlock_proxy::intercept::BOX_TRUST_BUNDLE.into(),
                append: i.ca_pem().to_string(),
            }],
            None => Vec::new(),
        };
        let (mut protection, extra_covers) = HostProtection::placeholders(policy, &sentinel)
            .map_err(|e| StartError::Refused(e.to_string()))?;
        let plan = BundlePlan::with_ops(
            policy,
            self.template,
            &agent_files,
            &layout,
            &extra_covers,
            extra,
        )
        .map_err(|e| StartError::Refused(e.to_string()))?;
        let seed = from.map(crate::checkpoint::files_of);
        let image_gap = layout
            .enter(
                policy.limits.disk,
                plan.image_root.as_deref(),
                seed.as_deref(),
            )
            .map_err(|e| StartError::Refused(e.to_string()))?;
        prepare(&plan.prep).map_err(|e| refused("cannot prepare the box's root", e))?;
        let idmap_gap = match (image_gap, attach_views(&plan)?) {
            (None, grants) => grants,
            (Some(image), None) => Some(image),
            (Some(image), Some(grants)) => Some(format!("{grants}; {image}")),
        };
        protection
            .apply(&plan.protect, &layout.empty_file, &layout.empty_dir)
            .map_err(|e| StartError::Refused(e.to_string()))?;
        if idmap_gap.is_some() && policy.fail_if_unavailable {
            return Err(StartError::Refused(format!(
                "the policy requires every layer (fail_if_unavailable) but not every mount can be idmapped: {}",
                idmap_gap.unwrap_or_default()
            )));
        }
        let config = serde_json::to_vec_pretty(&plan.spec)
            .map_err(|e| refused("cannot write the OCI config", e))?;
        std::fs::write(layout.bundle.join("config.json"), config)
            .map_err(|e| refused("cannot write the OCI config", e))?;
        let limits = cgroup_limits(policy);
        let cgroup = match limits.is_empty() {
            true => None,
            false => {
                let cg = BoxCgroup::create_unique("airlock-gvisor", &limits, true)
                    .map_err(|e| refused("cannot make the box's cgroup", e))?;
                for p in cg.paths() {
                    sentinel.register_cgroup(&p);
                }
                Some(cg)
            }
        };
        let receipt = receipt::receipt(
            policy,
            &Facts {
                runsc: self.runsc,
                plan: &plan,
                template: self.template,
                cgroup: cgroup.is_some() || limits.is_empty(),
                idmap_gap,
            },
        )
        .map_err(|e| StartError::Refused(e.to_string()))?;
        let (door, network) = match policy.network {
            NetworkMode::None => (None, RunscNetwork::None),
            NetworkMode::Proxy => (
                Some(
                    ProxyDoor::make(airlock_native::PROXY_PORT)
                        .map_err(|e| refused("cannot make the box's network namespace", e))?,
                ),
                RunscNetwork::Host,
            ),
            NetworkMode::Host => (None, RunscNetwork::Host),
        };
        let mut running = RunningBox {
            receipt,
            env: command_env(policy, self.template, self.runsc),
            cwd: policy.cwd.to_string_lossy().into_owned(),
            agent: None,
            runsc: self.runsc.clone(),
            network,
            id: String::new(),
            generation: 0,
            layout,
            child: None,
            pidfd: None,
            relay: None,
            stopped: false,
            paused: false,
            frozen: false,
            processes_when_frozen: None,
            netns: None,
            cgroup,
            proxy: None,
            protection: Some(protection),
            sentinel: Some(sentinel),
        };
        let fail = |mut running: RunningBox, e: StartError| {
            running.close();
            e
        };
        let door = door.map(|d| {
            running.netns = Some(d.netns);
            d.listener
        });
        let image = from.map(crate::checkpoint::memory_of);
        let launch = match &image {
            Some(image) => Launch::Restore(image),
            None => Launch::Run,
        };
        if let Err(e) = running.spawn(&launch) {
            return Err(fail(running, e));
        }
        if let Some(listener) = door {
            let rules = match egress_rules(&policy.egress) {
                Ok(r) => r,
                Err(e) => return Err(fail(running, StartError::Refused(e))),
            };
            let audit = match &self.audit {
                Some(path) => match airlock_native::open_output(
                    path,
                    airlock_native::OutputMode::Append,
                    &airlock_native::box_writable_roots(policy),
                ) {
                    Ok(f) => Some(f),
                    Err(e) => return Err(fail(running, refused("cannot open the audit file", e))),
                },
                None => None,
            };
            // The approver program, else the owner (the server); `on-request` with neither is
            // refused rather than run as `never`.
            let approval = match airlock_proxy::approval::gate_for(
                &policy.egress.approval,
                self.asker.clone(),
            ) {
                Ok(g) => g,
                Err(e) => return Err(fail(running, StartError::Refused(e.to_string()))),
            };
            let config = airlock_proxy::server::ProxyConfig {
                rules,
                max_connections: policy.egress.max_connections as usize,
                byte_budget: policy.egress.byte_budget,
                connect_timeout: Duration::from_secs(30),
                audit,
                on_event: self.on_event.clone(),
                intercept: interceptor,
                approval,
                // The box's sockets live in the Sentry's own network stack: the host cannot
                // tell which process holds a connection.
                peer_names: None,
            };
            match airlock_proxy::server::start(listener, config) {
                Ok(p) => {
                    if !policy.secrets.is_empty() {
                        airlock_native::protect_process();
                    }
                    running.proxy = Some(p)
                }
                Err(e) => return Err(fail(running, refused("cannot start the egress proxy", e))),
            }
        }
        if matches!(launch, Launch::Run) {
            if let Err(e) = running.greet() {
                return Err(fail(running, e));
            }
        }
        if crate::checkpoint::kind(&running.runsc, running.network).is_some() {
            if let Err(e) = running.relay_agent() {
                return Err(fail(running, e));
            }
        }
        Ok(running)
    }
}

/// What commands start with: the template's environment, the policy's allowlist over it, and
/// the proxy's variables for a proxied box, the statx shim where this runsc needs it.
fn command_env(
    policy: &ResolvedPolicy,
    template: &Template,
    runsc: &Runsc,
) -> BTreeMap<String, String> {
    let mut env = match template {
        Template::Host => BTreeMap::new(),
        Template::Image(t) => t.defaults.env.clone(),
    };
    env.extend(policy.env.iter().cloned());
    if policy.network == NetworkMode::Proxy {
        env.extend(airlock_native::proxy_env());
    }
    if !policy.secrets.is_empty() {
        env.extend(airlock_proxy::intercept::box_trust_env());
    }
    if runsc.needs_statx_shim() {
        crate::compat::preload(&mut env, crate::compat::STATX_COMPAT_INSIDE);
    }
    if runsc.needs_xattr_shim() {
        crate::compat::preload(&mut env, crate::compat::XATTR_COMPAT_INSIDE);
    }
    env
}

/// Opens the files through which runsc's process joins the box's cgroups before it execs:
/// on v1 each hierarchy's `tasks` (the forked child is single-threaded, so its thread is the
/// whole process, and a thread moving itself skips the kernel's global lock: see
/// [`BoxCgroup::self_join_files`]), on v2 each `cgroup.procs`.
fn cgroup_procs(cg: Option<&BoxCgroup>) -> std::io::Result<Vec<OwnedFd>> {
    if let Some(files) = cg
        .map(BoxCgroup::self_join_files)
        .transpose()
        .map_err(std::io::Error::other)?
        .flatten()
    {
        return Ok(files);
    }
    cg.map(|cg| cg.paths())
        .unwrap_or_default()
        .iter()
        .map(|p| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p.join("cgroup.procs"))
                .map(OwnedFd::from)
        })
        .collect()
}

impl RunningBox {
    /// Runs `runsc run` (or `runsc restore`) with the agent's connection as its stdin and
    /// stdout (runsc hands its stdio to the container's init), in the box's cgroup and network
    /// namespace, dying with this process. The connection is made on the first start and kept
    /// across a restore in place.
    pub(crate) fn spawn(&mut self, launch: &Launch) -> Result<(), StartError> {
        let (ours, theirs) =
            UnixStream::pair().map_err(|e| refused("cannot make the agent's connection", e))?;
        let theirs_out = theirs
            .try_clone()
            .map_err(|e| refused("cannot make the agent's connection", e))?;
        self.generation += 1;
        self.id = format!("airlock-{}-{}", std::process::id(), self.generation);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.layout.log)
            .map_err(|e| refused("cannot open runsc's log", e))?;
        let procs = cgroup_procs(self.cgroup.as_ref())
            .map_err(|e| refused("cannot join the box's cgroup", e))?;
        let proc_fds: Vec<libc::c_int> = procs.iter().map(AsRawFd::as_raw_fd).collect();
        let netns_fd = self.netns.as_ref().map(AsRawFd::as_raw_fd);
        let mut cmd = self.runsc.command(&self.layout.state, self.network);
        match launch {
            Launch::Run => cmd.arg("run"),
            Launch::Restore(image) => cmd.arg("restore").arg("--image-path").arg(image),
        };
        cmd.arg("--bundle")
            .arg(&self.layout.bundle)
            .arg(&self.id)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::from(OwnedFd::from(theirs_out)))
            .stderr(Stdio::from(log))
            .env_clear()
            .env("PATH", airlock_policy::DEFAULT_PATH);
        // SAFETY: in the forked child before exec, only async-signal-safe syscalls on
        // descriptors opened before the fork and a static buffer.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The gofer's channels to the Sentry are locked shared memory (2 MiB each, a
                // few per mount), counted per user: under a distribution's 8 MiB default a
                // restore runs out and fails with ENOMEM. The box's memory is bounded by its
                // cgroup, not by this.
                let unlimited = libc::rlimit {
                    rlim_cur: libc::RLIM_INFINITY,
                    rlim_max: libc::RLIM_INFINITY,
                };
                libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited);
                for fd in &proc_fds {
                    if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(ns) = netns_fd {
                    if libc::setns(ns, libc::CLONE_NEWNET) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| refused(&format!("cannot run {}", self.runsc.path.display()), e))?;
        drop(procs);
        // SAFETY: pidfd_open on our own child; returns a new descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
        self.child = Some(child);
        if pidfd < 0 {
            return Err(refused(
                "cannot watch runsc",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: a fresh descriptor from pidfd_open, ours alone.
        self.pidfd = Some(unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) });
        match &self.relay {
            Some(relay) => relay.replace(ours),
            None => self.agent = Some(ours),
        }
        if matches!(launch, Launch::Restore(_)) {
            self.wait_restored()?;
        }
        Ok(())
    }

    /// Waits (bounded) until runsc says the restored container runs: by then it has read the
    /// image (or holds it open), so the caller may move or delete the checkpoint (the store
    /// renames a staged one into place and drops a pause's once resumed). A restore that
    /// fails is an error saying why, not a box whose agent is silently gone.
    fn wait_restored(&mut self) -> Result<(), StartError> {
        #[derive(serde::Deserialize)]
        struct State {
            status: String,
        }
        let deadline = Instant::now() + HELLO_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(StartError::Refused(format!(
                        "runsc restore ended ({status}) before the box ran{}",
                        self.runsc_complaint()
                    )));
                }
            }
            let out = self
                .runsc
                .command(&self.layout.state, self.network)
                .arg("state")
                .arg(&self.id)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .map_err(|e| refused("cannot run runsc state", e))?;
            let state = serde_json::from_slice::<State>(&out.stdout).ok();
            if state.is_some_and(|s| s.status == "running") {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(StartError::Refused(format!(
                    "the restored box did not run within {} s{}",
                    HELLO_TIMEOUT.as_secs(),
                    self.runsc_complaint()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// From now on the owner's connection goes through a [`Relay`] to this sandbox's socket.
    fn relay_agent(&mut self) -> Result<(), StartError> {
        let Some(box_side) = self.agent.take() else {
            return Err(StartError::Refused(
                "the box's agent is not connected".into(),
            ));
        };
        let (owner_client, owner_host) =
            UnixStream::pair().map_err(|e| refused("cannot make the agent's connection", e))?;
        let relay = Relay::start(owner_host, box_side)
            .map_err(|e| refused("cannot relay the agent's connection", e))?;
        self.relay = Some(relay);
        self.agent = Some(owner_client);
        Ok(())
    }

    /// Waits for the agent's hello; if runsc fails first, says why from its log.
    fn greet(&mut self) -> Result<(), StartError> {
        let Some(sock) = self.agent.take() else {
            return Err(StartError::Refused(
                "the box's agent is not connected".into(),
            ));
        };
        match AgentClient::connect(sock, HELLO_TIMEOUT)
            .ok()
            .and_then(AgentClient::into_stream)
        {
            Some(stream) => {
                self.agent = Some(stream);
                Ok(())
            }
            None => Err(StartError::Refused(format!(
                "the box's agent did not greet under runsc{}",
                self.runsc_complaint()
            ))),
        }
    }

    /// runsc's last lines of complaint, as ` (runsc: …)`, or nothing.
    pub fn runsc_complaint(&self) -> String {
        let log = std::fs::read_to_string(&self.layout.log).unwrap_or_default();
        let last: Vec<&str> = log.lines().rev().take(3).collect();
        if last.is_empty() {
            return String::new();
        }
        format!(
            " (runsc: {})",
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )
    }

    /// Whether the host's OOM killer killed something of the box (its Sentry, in effect).
    pub fn oom_killed(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|cg| cg.events().oom_kills > 0)
    }

    /// runsc's process, as a pollable descriptor (-1: none).
    pub fn runsc_pidfd(&self) -> libc::c_int {
        self.pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            live_egress: self.proxy.is_some(),
            pause: true,
            checkpoint: crate::checkpoint::kind(&self.runsc, self.network),
            // An idle Sentry is never quite idle: its Go runtime wakes thousands of times a
            // second (about 3.5 % of a core per box, measured here; gVisor's own issues report
            // more). The cgroup's freezer stops all of it while the box waits in a pool.
            park: self.can_freeze(),
        }
    }

    pub fn usage(&self) -> Usage {
        let cg = self.cgroup.as_ref();
        Usage {
            cpu_usec: cg.and_then(BoxCgroup::cpu_usage_usec),
            memory_bytes: cg.and_then(BoxCgroup::current_memory),
            memory_peak_bytes: cg.and_then(BoxCgroup::peak_memory),
            disk_bytes: disk_used(&self.layout.scratch),
            processes: match self.frozen {
                true => self.processes_when_frozen,
                false => self.processes(),
            },
        }
    }

    /// The box's processes as the Sentry counts them (`runsc ps`): its own tasks, not the
    /// host tasks of the Sentry and gofer.
    fn processes(&self) -> Option<u64> {
        let out = self
            .runsc
            .command(&self.layout.state, self.network)
            .args(["ps", "--format", "json", &self.id])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let pids: Vec<i64> = serde_json::from_slice(&out.stdout).ok()?;
        u64::try_from(pids.len()).ok()
    }

    pub fn set_egress(&self, egress: &Egress) -> Result<(), String> {
        let Some(proxy) = &self.proxy else {
            return Err(
                "the network policy can only change for a box started with --net proxy".into(),
            );
        };
        proxy.set_rules(egress_rules(egress)?);
        Ok(())
    }

    /// Runs `runsc <args…>` on this box's state; an error is runsc's last line of complaint.
    pub(crate) fn runsc_call(&self, args: &[&std::ffi::OsStr]) -> Result<(), String> {
        let verb = args
            .first()
            .map_or_else(String::new, |v| v.to_string_lossy().into_owned());
        let out = self
            .runsc
            .command(&self.layout.state, self.network)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run runsc {verb}: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "runsc {verb} failed: {}",
            err.lines().last().unwrap_or("").trim()
        ))
    }

    /// Stops the box in place: `runsc pause` stops its tasks inside the Sentry, then the
    /// cgroup's freezer stops the Sentry and gofer themselves, which `runsc pause` leaves
    /// running (an idle Sentry spends about 3.5 % of a core here). A box without a freezer is
    /// only paused by runsc.
    pub fn pause(&mut self) -> Result<(), String> {
        let id = self.id.clone();
        self.runsc_call(&["pause".as_ref(), id.as_ref()])?;
        self.paused = true;
        if self.can_freeze() {
            if let Err(e) = self.freeze_counted() {
                let _ = self.runsc_call(&["resume".as_ref(), id.as_ref()]);
                self.paused = false;
                return Err(format!(
                    "cannot freeze the box's Sentry: {e}; the box runs on (pause it again, or \
                     delete it)"
                ));
            }
        }
        Ok(())
    }

    /// Freezes the box's cgroup after counting its processes (what its usage says meanwhile:
    /// `runsc ps` cannot ask a frozen Sentry).
    fn freeze_counted(&mut self) -> Result<(), String> {
        let processes = self.processes();
        self.freeze()?;
        self.processes_when_frozen = processes;
        Ok(())
    }

    pub fn resume(&mut self) -> Result<(), String> {
        self.thaw()?;
        let id = self.id.clone();
        self.runsc_call(&["resume".as_ref(), id.as_ref()])?;
        self.paused = false;
        Ok(())
    }

    pub(crate) fn frozen(&self) -> bool {
        self.frozen
    }

    fn can_freeze(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|cg| cg.can_freeze().is_ok())
    }

    /// Freezes the box's cgroup: runsc, the Sentry, the gofer, every process of the box.
    fn freeze(&mut self) -> Result<(), String> {
        let Some(cg) = &self.cgroup else {
            return Err("the box has no cgroup (it was started without limits)".into());
        };
        cg.freeze().map_err(|e| e.to_string())?;
        self.frozen = true;
        Ok(())
    }

    /// Thaws the box's cgroup if it is frozen.
    pub(crate) fn thaw(&mut self) -> Result<(), String> {
        if !self.frozen {
            return Ok(());
        }
        if let Some(cg) = &self.cgroup {
            cg.thaw()
                .map_err(|e| format!("cannot thaw the box's Sentry: {e}"))?;
        }
        self.frozen = false;
        self.processes_when_frozen = None;
        Ok(())
    }

    /// Re-freezes a box that [`RunningBox::thaw`] thawed for a runsc call (best effort: a box
    /// left thawed still works, it only spends CPU).
    pub(crate) fn refreeze(&mut self) {
        if self.can_freeze() {
            let _ = self.freeze_counted();
        }
    }

    /// Freezes runsc, its Sentry and gofer and every process of the box while it waits
    /// unclaimed in a pool: none of them runs (or spends CPU) until [`RunningBox::unpark`].
    /// Closing it still works: the cgroup is thawed before it is killed.
    pub fn park(&mut self) -> Result<(), String> {
        self.freeze()
    }

    /// Continues a parked box.
    pub fn unpark(&mut self) -> Result<(), String> {
        self.thaw()
    }

    /// Ends the box and frees what it holds: runsc and everything it started, the proxy, the
    /// cgroup. (The tmpfs and its mounts go with this process's mount namespace.)
    pub fn close(&mut self) {
        self.agent = None;
        if let Some(relay) = self.relay.take() {
            relay.stop();
        }
        if let Some(mut child) = self.child.take() {
            match &self.cgroup {
                // runsc, its gofer and sandbox and every process of the box are in the cgroup:
                // killing it ends them all at once, with no runsc call to wait for.
                Some(cg) => cg.kill_all(),
                None => {
                    let _ = self
                        .runsc
                        .command(&self.layout.state, self.network)
                        .args(["kill", "--all", &self.id, "KILL"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                }
            }
            let deadline = Instant::now() + KILL_GRACE;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            // runsc's state is on the tmpfs that goes with this process: no `runsc delete`.
        }
        self.pidfd = None;
        if let Some(proxy) = self.proxy.take() {
            drop(proxy.stop());
        }
        if let Some(mut cg) = self.cgroup.take() {
            cg.kill_all();
            let _ = cg.destroy();
        }
        drop(self.protection.take());
        if let Some(s) = self.sentinel.take() {
            s.finish();
        }
    }
}

impl Drop for RunningBox {
    fn drop(&mut self) {
        self.close();
    }
}

/// Bytes used on the scratch tmpfs.
fn disk_used(scratch: &Path) -> Option<u64> {
    let p = CString::new(scratch.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid statvfs to fill.
    if unsafe { libc::statvfs(p.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_blocks - st.f_bfree) * st.f_frsize)
}
