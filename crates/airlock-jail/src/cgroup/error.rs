//! The error type of the `cgroup` module, and the fix hints its messages carry.

use std::io;
use std::path::PathBuf;

/// Why a cgroup could not be probed, created, joined or removed.
///
/// Messages name the file involved and say how to fix the problem; the underlying OS error is
/// available through `source()`.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The box name cannot be used as a cgroup directory name.
    #[error("cgroup name {name:?} is invalid: use 1 to 255 characters, none of them '/' or NUL, and not '.' or '..'")]
    InvalidName { name: String },

    /// A requested limit is out of range; nothing was created.
    #[error("cgroup limit {limit} = {value} is invalid: {fix}")]
    InvalidLimit {
        limit: &'static str,
        value: String,
        fix: &'static str,
    },

    /// No cgroup hierarchy this process can use was found.
    #[error("no usable cgroup hierarchy: {reason}")]
    NoHierarchy { reason: String },

    /// A requested limit needs a controller that this host does not let us use.
    #[error("the {controller} controller is not available: {reason}")]
    ControllerUnavailable {
        controller: &'static str,
        reason: String,
    },

    /// The box could not be frozen (or has no freezer).
    #[error("cannot freeze the box through {path}: {why}")]
    Freeze { path: PathBuf, why: String },

    /// A directory with the box's name already exists; it is never adopted.
    #[error("cgroup {path} already exists: pick a unique box name, or remove the stale directory with rmdir")]
    AlreadyExists { path: PathBuf },

    /// `mkdir` of the box cgroup failed.
    #[error("could not create cgroup {path}: {fix}")]
    CreateDir {
        path: PathBuf,
        fix: String,
        #[source]
        source: io::Error,
    },

    /// A control file could not be written (a limit, a controller enable, a pid).
    #[error("could not write {value:?} to {path}: {fix}")]
    WriteFile {
        path: PathBuf,
        value: String,
        fix: String,
        #[source]
        source: io::Error,
    },

    /// A cgroup directory could not be removed before the deadline.
    #[error("could not remove cgroup {path}: {fix}")]
    Remove {
        path: PathBuf,
        fix: String,
        #[source]
        source: io::Error,
    },
}

/// A sentence saying how to fix a failed write or mkdir in a cgroup filesystem.
pub(crate) fn fix_hint(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied; run as root, or run inside a cgroup delegated to the current user (e.g. `systemd-run --user --scope -p Delegate=yes`)".to_owned(),
        Some(libc::EROFS) => "the cgroup filesystem is mounted read-only; mount it read-write (e.g. run the container with a writable cgroup namespace)".to_owned(),
        Some(libc::ENOENT) => "the kernel does not provide this file; the controller is not enabled for this cgroup or not built into the kernel".to_owned(),
        Some(libc::EINVAL) | Some(libc::ERANGE) => "the kernel rejected the value as out of range; choose a smaller limit".to_owned(),
        Some(libc::EBUSY) => "the cgroup is busy: it has processes or child cgroups that conflict with this change (cgroup v2 no-internal-processes rule)".to_owned(),
        Some(libc::ENOSPC) => "the cgroup hierarchy's limit on descendants or depth is reached; remove stale cgroups or raise cgroup.max.descendants".to_owned(),
        Some(libc::ESRCH) => "the process no longer exists".to_owned(),
        Some(libc::EOPNOTSUPP) => "the kernel does not support this operation on this cgroup (e.g. a threaded cgroup)".to_owned(),
        _ => "unexpected error from the cgroup filesystem; check dmesg and the mount options".to_owned(),
    }
}
