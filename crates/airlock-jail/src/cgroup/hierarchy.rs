//! Finds where this process's cgroups are, per controller, and whether child cgroups with that
//! controller can be made there.
//!
//! The decision logic is pure (`plan_v1`, `v2_controller_state`); only `discover` reads files.

use std::path::{Path, PathBuf};

use super::cgroupfs;
use super::parse::{self, CgroupFsType, CgroupMount, ProcCgroupEntry};

/// Which cgroup interface the box's limits are written through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CgroupVersion {
    /// Legacy per-controller hierarchies (`memory.limit_in_bytes`, `cpu.cfs_quota_us`, ...).
    V1,
    /// The unified hierarchy (`memory.max`, `cpu.max`, ...).
    V2,
}

/// A resource controller airlock sets limits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controller {
    Memory,
    Pids,
    Cpu,
}

impl Controller {
    pub(crate) const ALL: [Controller; 3] = [Controller::Memory, Controller::Pids, Controller::Cpu];

    /// The kernel's name for the controller.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
        }
    }

    fn index(self) -> usize {
        match self {
            Controller::Memory => 0,
            Controller::Pids => 1,
            Controller::Cpu => 2,
        }
    }
}

/// Where child cgroups for one controller go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    /// Our own cgroup's directory in the hierarchy holding the controller.
    pub(crate) parent: PathBuf,
    /// Our own cgroup's path as `/proc/<pid>/cgroup` shows it for this hierarchy.
    pub(crate) cgroup_path: String,
    /// v2 only: the controller must first be enabled in `parent/cgroup.subtree_control`.
    pub(crate) needs_enable: bool,
}

/// The result of discovery: a version and, per controller, a site or the reason there is none.
#[derive(Debug, Clone)]
pub(crate) struct Hierarchy {
    pub(crate) version: CgroupVersion,
    sites: [Result<Site, String>; 3],
    /// v2: our cgroup (directory and path), usable for a box without limits (tracking only).
    pub(crate) v2_parent: Option<(PathBuf, String)>,
    /// v1: where the freezer hierarchy shows our cgroup (directory, path), or why it cannot.
    pub(crate) v1_freezer: Result<(PathBuf, String), String>,
}

impl Hierarchy {
    pub(crate) fn site(&self, controller: Controller) -> &Result<Site, String> {
        &self.sites[controller.index()]
    }
}

const PROC_CGROUP: &str = "/proc/self/cgroup";
const PROC_MOUNTINFO: &str = "/proc/self/mountinfo";

/// What one discovery found: kept by a caller that both probes and makes a box's cgroup, so
/// that `/proc/self/cgroup` and `/proc/self/mountinfo` are read and parsed once per box start
/// instead of three times ([`crate::cgroup::probe_writable`] alone, then
/// [`crate::cgroup::BoxCgroup::create_unique`], then its freezer).
#[derive(Debug, Clone)]
pub struct Discovery(pub(crate) Result<Hierarchy, String>);

/// Discovers the calling process's cgroups now, for [`Discovery::probe_writable`] and
/// [`crate::cgroup::BoxCgroup::create_unique_in`].
pub fn discovery() -> Discovery {
    Discovery(discover())
}

/// Reads a `/proc` file in one `read(2)` where it fits (its size is unknown until read: a
/// plain `read_to_string` starts with a 32-byte read and doubles, a dozen calls for a
/// mountinfo, each one through the kernel's seq_file).
fn read_proc(path: &str) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::with_capacity(32 * 1024);
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("cannot read {path} ({e}); is /proc mounted?"))?;
    Ok(text)
}

/// Discovers the hierarchy of the calling process. `Err` carries a reason sentence.
pub(crate) fn discover() -> Result<Hierarchy, String> {
    let proc_cgroup = read_proc(PROC_CGROUP)?;
    let mountinfo = read_proc(PROC_MOUNTINFO)?;
    let entries = parse::parse_proc_cgroup(&proc_cgroup);
    let mounts = parse::parse_mountinfo(&mountinfo);

    if let Some(sites) = plan_v1(&entries, &mounts) {
        return Ok(Hierarchy {
            version: CgroupVersion::V1,
            sites,
            v2_parent: None,
            v1_freezer: super::freezer::v1_site(&entries, &mounts),
        });
    }
    let (parent, cgroup_path) = v2_dir(&entries, &mounts)?;
    let state = V2DirState::read(&parent);
    let sites = Controller::ALL.map(|c| {
        v2_controller_state(&state, c).map(|needs_enable| Site {
            parent: parent.clone(),
            cgroup_path: cgroup_path.clone(),
            needs_enable,
        })
    });
    Ok(Hierarchy {
        version: CgroupVersion::V2,
        sites,
        v2_parent: Some((parent, cgroup_path)),
        v1_freezer: Err("the freezer of cgroup v2 is each cgroup's own cgroup.freeze".into()),
    })
}

/// The v1 plan: `None` if none of memory, pids and cpu is bound to a v1 hierarchy (then v2 is
/// used). Controllers left on v2 in a mixed setup are reported unavailable.
pub(crate) fn plan_v1(
    entries: &[ProcCgroupEntry],
    mounts: &[CgroupMount],
) -> Option<[Result<Site, String>; 3]> {
    let bound_to_v1 = |c: Controller| {
        entries
            .iter()
            .find(|e| e.hierarchy_id != 0 && e.has_controller(c.name()))
    };
    if Controller::ALL.iter().all(|c| bound_to_v1(*c).is_none()) {
        return None;
    }
    Some(Controller::ALL.map(|c| {
        let entry = bound_to_v1(c).ok_or_else(|| {
            format!(
                "the {} controller is not mounted as a cgroup v1 hierarchy while others are \
                 (mixed v1/v2 controllers are not supported); mount it with \
                 `mount -t cgroup -o {} cgroup <dir>`",
                c.name(),
                c.name()
            )
        })?;
        let parent = mounts
            .iter()
            .filter(|m| m.fs_type == CgroupFsType::V1 && m.has_option(c.name()))
            .find_map(|m| parse::cgroup_dir(&m.mount_point, &m.root, &entry.path))
            .ok_or_else(|| {
                format!(
                    "no mount of the {} hierarchy shows this process's cgroup {} (see \
                     /proc/self/mountinfo); mount the hierarchy at its root",
                    c.name(),
                    entry.path
                )
            })?;
        Ok(Site {
            parent,
            cgroup_path: entry.path.clone(),
            needs_enable: false,
        })
    }))
}

fn v2_dir(
    entries: &[ProcCgroupEntry],
    mounts: &[CgroupMount],
) -> Result<(PathBuf, String), String> {
    let entry = entries
        .iter()
        .find(|e| e.hierarchy_id == 0)
        .ok_or_else(|| {
            "no cgroup is listed in /proc/self/cgroup; the kernel lacks cgroup support".to_owned()
        })?;
    let mut v2_mounts = mounts
        .iter()
        .filter(|m| m.fs_type == CgroupFsType::V2)
        .peekable();
    if v2_mounts.peek().is_none() {
        return Err("no cgroup2 filesystem is mounted; mount one with \
                    `mount -t cgroup2 none /sys/fs/cgroup`"
            .to_owned());
    }
    v2_mounts
        .find_map(|m| parse::cgroup_dir(&m.mount_point, &m.root, &entry.path))
        .map(|dir| (dir, entry.path.clone()))
        .ok_or_else(|| {
            format!(
                "no cgroup2 mount shows this process's cgroup {}; mount cgroup2 from inside \
                 this cgroup namespace",
                entry.path
            )
        })
}

/// What discovery needs to know about our own v2 cgroup directory.
#[derive(Debug, Clone, Default)]
pub(crate) struct V2DirState {
    pub(crate) dir: PathBuf,
    /// `cgroup.controllers`: what our cgroup may enable for its children.
    pub(crate) available: Vec<String>,
    /// `cgroup.subtree_control`: what is already enabled for children.
    pub(crate) enabled: Vec<String>,
    /// `cgroup.procs` is non-empty.
    pub(crate) has_processes: bool,
    /// The real root cgroup (it has no `cgroup.type`), exempt from the no-internal-processes rule.
    pub(crate) is_root: bool,
    /// `cgroup.subtree_control` is writable by us.
    pub(crate) subtree_writable: bool,
}

impl V2DirState {
    fn read(dir: &Path) -> V2DirState {
        let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        V2DirState {
            dir: dir.to_path_buf(),
            available: parse::controller_list(&read("cgroup.controllers")),
            enabled: parse::controller_list(&read("cgroup.subtree_control")),
            has_processes: !parse::pid_list(&read("cgroup.procs")).is_empty(),
            is_root: !dir.join("cgroup.type").exists(),
            subtree_writable: cgroupfs::writable(&dir.join("cgroup.subtree_control")),
        }
    }
}

/// Whether children of the v2 cgroup described by `state` can get `controller`:
/// `Ok(false)` already enabled, `Ok(true)` can be enabled, `Err(reason)` cannot.
pub(crate) fn v2_controller_state(
    state: &V2DirState,
    controller: Controller,
) -> Result<bool, String> {
    let name = controller.name();
    let dir = state.dir.display();
    if state.enabled.iter().any(|c| c == name) {
        return Ok(false);
    }
    if !state.available.iter().any(|c| c == name) {
        return Err(format!(
            "the {name} controller is not delegated to {dir}: it is missing from \
             {dir}/cgroup.controllers; enable it in the parent's cgroup.subtree_control, or run \
             under a delegated scope (`systemd-run --user --scope -p Delegate=yes`)"
        ));
    }
    if state.has_processes && !state.is_root {
        return Err(format!(
            "{dir} contains processes, so the cgroup v2 no-internal-processes rule forbids \
             enabling {name} for child cgroups; start airlock in a cgroup whose \
             cgroup.subtree_control already has +{name}, or move its processes into a leaf child"
        ));
    }
    if !state.subtree_writable {
        return Err(format!(
            "{dir}/cgroup.subtree_control is not writable, so {name} cannot be enabled for child \
             cgroups; run as root or in a delegated cgroup"
        ));
    }
    Ok(true)
}
