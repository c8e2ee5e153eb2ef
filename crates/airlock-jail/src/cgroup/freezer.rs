//! Freezing a box in place: every process of its cgroup stopped by the kernel (no signal the box
//! could catch or see), its memory left resident, and thawed again. cgroup v1 uses the freezer
//! hierarchy (`freezer.state`), v2 the cgroup's own `cgroup.freeze`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cgroupfs;
use super::error::{fix_hint, CgroupError};
use super::parse::{self, CgroupFsType, CgroupMount, ProcCgroupEntry};

/// How long a freeze may take before it is given up (and the box thawed again).
const FREEZE_TIMEOUT: Duration = Duration::from_secs(5);

/// The freezer of one box cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Freezer {
    /// The box's directory in the v1 freezer hierarchy.
    V1(PathBuf),
    /// The box's v2 directory.
    V2(PathBuf),
}

/// Where the v1 freezer hierarchy shows this process's cgroup: (our directory, our path).
pub(crate) fn v1_site(
    entries: &[ProcCgroupEntry],
    mounts: &[CgroupMount],
) -> Result<(PathBuf, String), String> {
    let entry = entries
        .iter()
        .find(|e| e.hierarchy_id != 0 && e.has_controller("freezer"))
        .ok_or_else(|| {
            "the freezer controller is not mounted as a cgroup v1 hierarchy; mount it with \
             `mount -t cgroup -o freezer cgroup /sys/fs/cgroup/freezer`"
                .to_string()
        })?;
    mounts
        .iter()
        .filter(|m| m.fs_type == CgroupFsType::V1 && m.has_option("freezer"))
        .find_map(|m| parse::cgroup_dir(&m.mount_point, &m.root, &entry.path))
        .map(|dir| (dir, entry.path.clone()))
        .ok_or_else(|| {
            format!(
                "no mount of the freezer hierarchy shows this process's cgroup {}",
                entry.path
            )
        })
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    cgroupfs::write_control(path, value).map_err(|source| CgroupError::WriteFile {
        fix: fix_hint(&source),
        path: path.to_path_buf(),
        value: value.to_owned(),
        source,
    })
}

impl Freezer {
    fn control(&self) -> PathBuf {
        match self {
            Freezer::V1(dir) => dir.join("freezer.state"),
            Freezer::V2(dir) => dir.join("cgroup.freeze"),
        }
    }

    /// Whether every process of the box is frozen now.
    pub(crate) fn is_frozen(&self) -> bool {
        match self {
            Freezer::V1(dir) => cgroupfs::read_control(&dir.join("freezer.state"))
                .is_some_and(|s| s.trim() == "FROZEN"),
            Freezer::V2(dir) => {
                cgroupfs::read_control(&dir.join("cgroup.events"))
                    .and_then(|t| parse::flat_keyed_value(&t, "frozen"))
                    == Some(1)
            }
        }
    }

    /// Stops every process of the box and returns once the kernel reports them all frozen.
    /// A box that does not freeze in time is thawed again and the error says so.
    pub(crate) fn freeze(&self) -> Result<(), CgroupError> {
        let value = match self {
            Freezer::V1(_) => "FROZEN",
            Freezer::V2(_) => "1",
        };
        let path = self.control();
        write(&path, value)?;
        let deadline = Instant::now() + FREEZE_TIMEOUT;
        while !self.is_frozen() {
            if Instant::now() >= deadline {
                let _ = self.thaw();
                return Err(CgroupError::Freeze {
                    path,
                    why: format!(
                        "its processes were not all frozen within {} s (one may be stuck in \
                         the kernel); the box was left running",
                        FREEZE_TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Continues every process of the box.
    pub(crate) fn thaw(&self) -> Result<(), CgroupError> {
        let value = match self {
            Freezer::V1(_) => "THAWED",
            Freezer::V2(_) => "0",
        };
        write(&self.control(), value)
    }
}
