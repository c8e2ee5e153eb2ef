//! `BoxCgroup`: the cgroup(s) made for one box, its limits, accounting and teardown.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cgroupfs;
use super::error::{fix_hint, CgroupError};
use super::freezer::Freezer;
use super::hierarchy::{self, CgroupVersion, Controller, Hierarchy, Site};
use super::limits::{cpu_quota_us, CgroupLimits, CPU_PERIOD_US};
use super::parse;

/// How long kill_all() and destroy() keep trying.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest a teardown waits for the processes it killed before it looks at the cgroup's
/// members again.
const KILL_ROUND: Duration = Duration::from_millis(50);

/// Limits a box has hit so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CgroupEvents {
    /// Processes the kernel OOM killer killed inside the box.
    pub oom_kills: u64,
    /// Forks or clones refused because the pids limit was reached.
    pub pids_max_hits: u64,
    /// Times memory usage hit the cap (v1 `memory.failcnt`, v2 `memory.events` max); reclaim
    /// may have satisfied them without a kill.
    pub memory_max_hits: u64,
}

/// A cgroup made for one box; removed on destroy()/Drop.
///
/// On cgroup v1 it is one directory per hierarchy holding a requested controller; on v2 a
/// single directory. It always sits below the creating process's own cgroup.
#[derive(Debug)]
pub struct BoxCgroup {
    name: String,
    version: CgroupVersion,
    /// Directories still to remove, in creation order.
    dirs: Vec<PathBuf>,
    /// The box's cgroup paths as `/proc/<pid>/cgroup` shows them, to verify members.
    cgroup_paths: Vec<String>,
    memory_dir: Option<PathBuf>,
    pids_dir: Option<PathBuf>,
    /// How the box is frozen in place, or why it cannot be.
    freezer: Result<Freezer, String>,
}

impl BoxCgroup {
    /// Creates `name` (e.g. "airlock-<pid>-<n>") under the current process's cgroup in every
    /// hierarchy needed for the requested limits, and writes the limits.
    ///
    /// Memory caps also cap swap where the kernel exposes it (v1 `memory.memsw.limit_in_bytes`,
    /// v2 `memory.swap.max = 0`). With no limits requested, a cgroup is still made (in the pids
    /// hierarchy on v1) so that the box's processes can be tracked and killed. Fails with a typed
    /// error naming the file and the fix if a requested limit cannot be set; then nothing created
    /// is left behind (v2 controllers enabled in our own `cgroup.subtree_control` stay enabled).
    ///
    /// The box also joins a freezer, so it can be paused ([`BoxCgroup::freeze`]). A box that
    /// never pauses (one command, then gone) is made with [`BoxCgroup::create_unpausable`].
    pub fn create(name: &str, limits: &CgroupLimits) -> Result<BoxCgroup, CgroupError> {
        Self::create_with(name, limits, true, &hierarchy::discovery())
    }

    /// As [`BoxCgroup::create`], without the freezer: one directory fewer to make and remove on
    /// the start of every one-shot box (on v1 the freezer is a hierarchy of its own).
    /// [`BoxCgroup::can_freeze`] then says why it cannot be paused.
    pub fn create_unpausable(name: &str, limits: &CgroupLimits) -> Result<BoxCgroup, CgroupError> {
        Self::create_with(name, limits, false, &hierarchy::discovery())
    }

    /// Creates the box's cgroup under a fresh name, `<prefix>-<pid>-<n>` (`n` counts up in this
    /// process), with or without a freezer ([`BoxCgroup::create`], [`BoxCgroup::create_unpausable`]).
    /// A name already taken is a stale directory of a dead process that had this PID (PIDs are
    /// reused; a cgroup outlives its box when its host was SIGKILLed before its sentinel could
    /// remove it): it is never adopted, and the next number is tried, up to 16 times.
    pub fn create_unique(
        prefix: &str,
        limits: &CgroupLimits,
        pausable: bool,
    ) -> Result<BoxCgroup, CgroupError> {
        Self::create_unique_in(&hierarchy::discovery(), prefix, limits, pausable)
    }

    /// As [`BoxCgroup::create_unique`], in the hierarchy `found` describes: the caller's
    /// [`Discovery`], which also gave it [`Discovery::probe_writable`], so that a box start
    /// reads `/proc/self/cgroup` and mountinfo once.
    ///
    /// [`Discovery`]: super::Discovery
    /// [`Discovery::probe_writable`]: super::Discovery::probe_writable
    pub fn create_unique_in(
        found: &hierarchy::Discovery,
        prefix: &str,
        limits: &CgroupLimits,
        pausable: bool,
    ) -> Result<BoxCgroup, CgroupError> {
        let mut tries = 0;
        loop {
            let name = next_unique_name(prefix);
            match Self::create_with(&name, limits, pausable, found) {
                Err(CgroupError::AlreadyExists { .. }) if tries < 16 => tries += 1,
                other => return other,
            }
        }
    }

    fn create_with(
        name: &str,
        limits: &CgroupLimits,
        pausable: bool,
        found: &hierarchy::Discovery,
    ) -> Result<BoxCgroup, CgroupError> {
        validate_name(name)?;
        limits.validate()?;
        let hierarchy = found
            .0
            .as_ref()
            .map_err(|reason| CgroupError::NoHierarchy {
                reason: reason.clone(),
            })?;

        let requested: Vec<Controller> = Controller::ALL
            .into_iter()
            .filter(|c| match c {
                Controller::Memory => limits.memory_bytes.is_some(),
                Controller::Pids => limits.pids.is_some(),
                Controller::Cpu => limits.cpus.is_some(),
            })
            .collect();
        let mut sites: Vec<(Option<Controller>, Site)> = Vec::new();
        for controller in &requested {
            match hierarchy.site(*controller) {
                Ok(site) => sites.push((Some(*controller), site.clone())),
                Err(reason) => {
                    return Err(CgroupError::ControllerUnavailable {
                        controller: controller.name(),
                        reason: reason.clone(),
                    })
                }
            }
        }
        if sites.is_empty() {
            sites.push((None, tracking_site(hierarchy)?));
        }

        for (controller, site) in &sites {
            if let (Some(controller), true) = (controller, site.needs_enable) {
                let path = site.parent.join("cgroup.subtree_control");
                let value = format!("+{}", controller.name());
                cgroupfs::write_control(&path, &value).map_err(|source| {
                    CgroupError::WriteFile {
                        fix: fix_hint(&source),
                        path,
                        value,
                        source,
                    }
                })?;
            }
        }

        let mut cgroup = BoxCgroup {
            name: name.to_owned(),
            version: hierarchy.version,
            dirs: Vec::new(),
            cgroup_paths: Vec::new(),
            memory_dir: None,
            pids_dir: None,
            freezer: Err("not set up".into()),
        };
        // From here on, an early return drops `cgroup`, whose Drop removes what was created.
        for (controller, site) in &sites {
            let dir = site.parent.join(name);
            if !cgroup.dirs.contains(&dir) {
                make_dir(&dir)?;
                cgroup.dirs.push(dir.clone());
                cgroup
                    .cgroup_paths
                    .push(parse::child_path(&site.cgroup_path, name));
            }
            match controller {
                Some(Controller::Memory) => cgroup.memory_dir = Some(dir),
                Some(Controller::Pids) => cgroup.pids_dir = Some(dir),
                _ => {}
            }
        }
        cgroup.freezer = match pausable {
            true => match cgroup.add_freezer(name, hierarchy) {
                Ok(f) => Ok(f),
                // A stale directory of a dead box holds this name in the freezer hierarchy
                // only: the name is taken, as in the others (the caller tries the next one),
                // never a box that silently cannot pause.
                Err(FreezerSetup::Taken(e)) => return Err(e),
                Err(FreezerSetup::Unavailable(why)) => Err(why),
            },
            false => Err("the box was started to run one command, without a freezer".into()),
        };
        for (controller, site) in &sites {
            let dir = site.parent.join(name);
            match controller {
                Some(Controller::Memory) => cgroup.write_memory(&dir, limits)?,
                Some(Controller::Pids) => cgroup.write_pids(&dir, limits)?,
                Some(Controller::Cpu) => cgroup.write_cpu(&dir, limits)?,
                None => {}
            }
        }
        Ok(cgroup)
    }

    /// Sets up the box's freezer: on v1 a directory in the freezer hierarchy (so that `add_pid`
    /// puts the box there too), on v2 its own `cgroup.freeze`. A host without one still runs
    /// boxes; they cannot be paused, and the reason is kept for the error.
    fn add_freezer(&mut self, name: &str, hierarchy: &Hierarchy) -> Result<Freezer, FreezerSetup> {
        match self.version {
            CgroupVersion::V2 => self
                .dirs
                .first()
                .filter(|d| d.join("cgroup.freeze").exists())
                .map(|d| Freezer::V2(d.clone()))
                .ok_or_else(|| {
                    FreezerSetup::Unavailable(
                        "this kernel's cgroup v2 has no cgroup.freeze (Linux < 5.2)".into(),
                    )
                }),
            CgroupVersion::V1 => {
                let (parent, path) = hierarchy
                    .v1_freezer
                    .clone()
                    .map_err(FreezerSetup::Unavailable)?;
                let dir = parent.join(name);
                if !self.dirs.contains(&dir) {
                    make_dir(&dir).map_err(|e| match e {
                        e @ CgroupError::AlreadyExists { .. } => FreezerSetup::Taken(e),
                        e => FreezerSetup::Unavailable(e.to_string()),
                    })?;
                    self.dirs.push(dir.clone());
                    self.cgroup_paths.push(parse::child_path(&path, name));
                }
                Ok(Freezer::V1(dir))
            }
        }
    }

    /// Whether the box can be frozen, and if not, why.
    pub fn can_freeze(&self) -> Result<(), String> {
        self.freezer.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Stops every process of the box in place (the kernel's freezer: nothing the box can catch
    /// or observe as a signal), keeping its memory; returns once all are frozen.
    pub fn freeze(&self) -> Result<(), CgroupError> {
        match &self.freezer {
            Ok(f) => f.freeze(),
            Err(why) => Err(CgroupError::Freeze {
                path: self.dirs.first().cloned().unwrap_or_default(),
                why: why.clone(),
            }),
        }
    }

    /// Continues a frozen box.
    pub fn thaw(&self) -> Result<(), CgroupError> {
        match &self.freezer {
            Ok(f) => f.thaw(),
            Err(why) => Err(CgroupError::Freeze {
                path: self.dirs.first().cloned().unwrap_or_default(),
                why: why.clone(),
            }),
        }
    }

    /// Whether the box is frozen now.
    pub fn is_frozen(&self) -> bool {
        self.freezer.as_ref().is_ok_and(Freezer::is_frozen)
    }

    fn write_memory(&self, dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let Some(bytes) = limits.memory_bytes else {
            return Ok(());
        };
        let bytes = bytes.to_string();
        match self.version {
            CgroupVersion::V1 => {
                write(dir, "memory.limit_in_bytes", &bytes)?;
                // memsw must be >= limit_in_bytes, so it is written second.
                if dir.join("memory.memsw.limit_in_bytes").exists() {
                    write(dir, "memory.memsw.limit_in_bytes", &bytes)?;
                }
            }
            CgroupVersion::V2 => {
                write(dir, "memory.max", &bytes)?;
                if dir.join("memory.swap.max").exists() {
                    write(dir, "memory.swap.max", "0")?;
                }
            }
        }
        Ok(())
    }

    fn write_pids(&self, dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
        match limits.pids {
            Some(pids) => write(dir, "pids.max", &pids.to_string()),
            None => Ok(()),
        }
    }

    fn write_cpu(&self, dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let Some(cpus) = limits.cpus else {
            return Ok(());
        };
        let quota = cpu_quota_us(cpus)?;
        match self.version {
            CgroupVersion::V1 => {
                write(dir, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
                write(dir, "cpu.cfs_quota_us", &quota.to_string())
            }
            CgroupVersion::V2 => write(dir, "cpu.max", &format!("{quota} {CPU_PERIOD_US}")),
        }
    }

    /// Moves a process (all its threads) into the box, in every hierarchy. On error the process
    /// may be in some hierarchies only; kill it.
    pub fn add_pid(&self, pid: libc::pid_t) -> Result<(), CgroupError> {
        for dir in &self.dirs {
            write(dir, "cgroup.procs", &pid.to_string())?;
        }
        Ok(())
    }

    /// Descriptors through which a process moves *itself* into the box, one per hierarchy,
    /// opened here (so the kernel checks this process's credentials, not the box's): on v1
    /// each hierarchy's `tasks` file. The box's init writes `0` to each ([`join_self`]) before
    /// any of its code runs, while it is still single-threaded.
    ///
    /// This is what makes a cold start fast. Moving another process (`cgroup.procs`, what
    /// [`BoxCgroup::add_pid`] writes) takes the kernel's global threadgroup lock for writing,
    /// which waits for an RCU grace period once the lock has been idle for a while: 5 to 15 ms
    /// on this kind of host, paid by every box started after a pause. A thread that moves only
    /// itself is exempt from that lock (0.05 ms).
    ///
    /// `None` on v2, which has no per-thread file outside threaded subtrees: use
    /// [`BoxCgroup::add_pid`] there.
    pub fn self_join_files(&self) -> Result<Option<Vec<std::os::fd::OwnedFd>>, CgroupError> {
        if self.version != CgroupVersion::V1 {
            return Ok(None);
        }
        let mut fds = Vec::with_capacity(self.dirs.len());
        for dir in &self.dirs {
            let path = dir.join("tasks");
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|source| CgroupError::WriteFile {
                    fix: fix_hint(&source),
                    path,
                    value: "0".to_owned(),
                    source,
                })?;
            fds.push(std::os::fd::OwnedFd::from(file));
        }
        Ok(Some(fds))
    }

    /// The processes now in the box (including its descendant cgroups), deduplicated.
    pub fn member_pids(&self) -> Vec<libc::pid_t> {
        let mut pids: Vec<libc::pid_t> = self
            .dirs
            .iter()
            .flat_map(|d| cgroupfs::member_pids(d))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Peak memory in bytes since creation (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`),
    /// if a memory limit was requested and the kernel reports it.
    pub fn peak_memory(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let file = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        parse::single_value(&cgroupfs::read_control(&dir.join(file))?)
    }

    /// Memory charged to the box now, in bytes (v1 `memory.usage_in_bytes`, v2
    /// `memory.current`), if a memory limit was requested and the kernel reports it.
    pub fn current_memory(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let file = match self.version {
            CgroupVersion::V1 => "memory.usage_in_bytes",
            CgroupVersion::V2 => "memory.current",
        };
        parse::single_value(&cgroupfs::read_control(&dir.join(file))?)
    }

    /// CPU time used by the box since it started, in microseconds: for every process now in
    /// the box, its own user and system time plus that of the children it has reaped (so the
    /// time of ended processes, all reaped inside the box, is counted once). Works on v1 and
    /// v2 without a CPU controller. `None` if no member could be read.
    pub fn cpu_usage_usec(&self) -> Option<u64> {
        // SAFETY: sysconf only reads a configuration value.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let ticks = u64::try_from(ticks).ok().filter(|t| *t > 0)?;
        let mut total = None;
        for pid in self.member_pids() {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(t) = parse::stat_cpu_ticks(&stat) {
                total = Some(total.unwrap_or(0) + t);
            }
        }
        total.map(|t: u64| t.saturating_mul(1_000_000) / ticks)
    }

    /// Limits hit so far. Counters the kernel does not expose read as 0.
    pub fn events(&self) -> CgroupEvents {
        let read = |dir: &Option<PathBuf>, file: &str, key: &str| {
            dir.as_ref()
                .and_then(|d| cgroupfs::read_control(&d.join(file)))
                .and_then(|text| parse::flat_keyed_value(&text, key))
                .unwrap_or(0)
        };
        let (oom_kills, memory_max_hits) = match self.version {
            CgroupVersion::V1 => (
                read(&self.memory_dir, "memory.oom_control", "oom_kill"),
                self.memory_dir
                    .as_ref()
                    .and_then(|d| cgroupfs::read_control(&d.join("memory.failcnt")))
                    .and_then(|t| parse::single_value(&t))
                    .unwrap_or(0),
            ),
            CgroupVersion::V2 => (
                read(&self.memory_dir, "memory.events", "oom_kill"),
                read(&self.memory_dir, "memory.events", "max"),
            ),
        };
        CgroupEvents {
            oom_kills,
            pids_max_hits: read(&self.pids_dir, "pids.events", "max"),
            memory_max_hits,
        }
    }

    /// SIGKILLs every process in the box and waits (up to ~2 s) until the box is empty.
    pub fn kill_all(&self) {
        self.kill_until(Instant::now() + TEARDOWN_TIMEOUT);
    }

    fn kill_until(&self, deadline: Instant) {
        // Frozen processes cannot act on SIGKILL (v1) until thawed.
        if let Ok(f) = &self.freezer {
            let _ = f.thaw();
        }
        if self.version == CgroupVersion::V2 {
            for dir in &self.dirs {
                let kill_file = dir.join("cgroup.kill");
                if kill_file.exists() {
                    let _ = cgroupfs::write_control(&kill_file, "1");
                }
            }
        }
        let mut before = Vec::new();
        loop {
            let pids = self.member_pids();
            if pids.is_empty() {
                return;
            }
            // The same members as last round although those killed have ended (an exited
            // process the cgroup still lists): a tick between rounds, never a busy loop.
            let stuck = pids == before;
            let killed: Vec<_> = pids
                .iter()
                .filter_map(|pid| cgroupfs::kill_member(*pid, &self.cgroup_paths))
                .collect();
            before = pids;
            if Instant::now() >= deadline {
                return;
            }
            // Until the processes just killed have ended, not a fixed tick: a process with many
            // threads (a gVisor Sentry) takes a few milliseconds to go, and 1 ms sleeps in
            // turn added up to a third of a gVisor box's delete. Bounded, so that members
            // this round could not signal (no pidfd, or new) are looked at again soon.
            let round = deadline.min(Instant::now() + KILL_ROUND);
            if stuck || killed.is_empty() || !cgroupfs::wait_ended(&killed, round) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Kills every process in the box, then removes its directories, retrying briefly while
    /// processes exit; bounded by ~2 s. Idempotent: once it has succeeded, later calls do
    /// nothing. On error the directories not yet removed are kept for a later call.
    pub fn destroy(&mut self) -> Result<(), CgroupError> {
        if self.dirs.is_empty() {
            return Ok(());
        }
        let deadline = Instant::now() + TEARDOWN_TIMEOUT;
        self.kill_until(deadline);
        let mut first_error = None;
        let mut remaining = Vec::new();
        for dir in self.dirs.drain(..).rev() {
            if let Err(source) = cgroupfs::remove_tree(&dir, deadline) {
                if first_error.is_none() {
                    first_error = Some(CgroupError::Remove {
                        fix: remove_hint(&source),
                        path: dir.clone(),
                        source,
                    });
                }
                remaining.push(dir);
            }
        }
        remaining.reverse();
        self.dirs = remaining;
        match first_error {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The directories of the box that exist (empty after a successful destroy()).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.clone()
    }

    /// The cgroup interface this box uses.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The box's cgroup directory name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for BoxCgroup {
    fn drop(&mut self) {
        // Best effort: Drop cannot report failure; callers wanting the error call destroy().
        let _ = self.destroy();
    }
}

/// Where a box without limits goes: a cgroup is still useful to track and kill its processes.
fn tracking_site(hierarchy: &hierarchy::Hierarchy) -> Result<Site, CgroupError> {
    if let Some((parent, cgroup_path)) = &hierarchy.v2_parent {
        return Ok(Site {
            parent: parent.clone(),
            cgroup_path: cgroup_path.clone(),
            needs_enable: false,
        });
    }
    [Controller::Pids, Controller::Memory, Controller::Cpu]
        .into_iter()
        .find_map(|c| hierarchy.site(c).as_ref().ok().cloned())
        .ok_or_else(|| CgroupError::NoHierarchy {
            reason: "none of the pids, memory or cpu v1 hierarchies is usable".to_owned(),
        })
}

/// Accepts names made of ASCII letters, digits, '-', '_' and '.', not starting with '.'.
pub(crate) fn validate_name(name: &str) -> Result<(), CgroupError> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(CgroupError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// Why a box got no freezer.
enum FreezerSetup {
    /// Its name is taken in the freezer hierarchy (a stale directory): try another name.
    Taken(CgroupError),
    /// The host has none usable: the box runs, and cannot pause (the reason is kept).
    Unavailable(String),
}

fn make_dir(dir: &Path) -> Result<(), CgroupError> {
    std::fs::create_dir(dir).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            CgroupError::AlreadyExists {
                path: dir.to_path_buf(),
            }
        } else {
            CgroupError::CreateDir {
                path: dir.to_path_buf(),
                fix: fix_hint(&source),
                source,
            }
        }
    })
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), CgroupError> {
    let path = dir.join(file);
    cgroupfs::write_control(&path, value).map_err(|source| CgroupError::WriteFile {
        fix: fix_hint(&source),
        path,
        value: value.to_owned(),
        source,
    })
}

fn remove_hint(err: &std::io::Error) -> String {
    if err.raw_os_error() == Some(libc::EBUSY) {
        "processes are still in the cgroup after SIGKILL (e.g. stuck in uninterruptible \
         sleep); call destroy() again later"
            .to_owned()
    } else {
        fix_hint(err)
    }
}

/// Numbers the names [`BoxCgroup::create_unique`] tries, process-wide.
static UNIQUE_COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The next name [`BoxCgroup::create_unique`] would try for `prefix`.
pub(crate) fn next_unique_name(prefix: &str) -> String {
    let n = UNIQUE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// The name [`BoxCgroup::create_unique`] will try next for `prefix` (tests plant a stale one).
#[cfg(test)]
pub(crate) fn peek_unique_name(prefix: &str) -> String {
    let n = UNIQUE_COUNTER.load(std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// Moves the calling thread into the cgroups behind `fds` (from
/// [`BoxCgroup::self_join_files`]) by writing `0` to each. Call it in a single-threaded
/// process (the thread is then the whole process). Only `write(2)`: safe between fork and exec.
pub fn join_self(fds: &[libc::c_int]) -> std::io::Result<()> {
    for &fd in fds {
        // SAFETY: writes one byte from a static buffer to a descriptor the caller owns.
        let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        if n != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
