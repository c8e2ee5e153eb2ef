//! Filesystem and signal operations on cgroup directories: control-file writes, process lists,
//! killing members without racing pid reuse, and removal with retries.
//!
//! The only raw syscalls of the module (`access`, `pidfd_open`, `pidfd_send_signal`, `kill`) are
//! here, each routed through [`check`].

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::parse;

/// Turns a `-1`-on-error syscall return value into an `io::Result`.
fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Writes `value` to an existing control file in one `write(2)`, as cgroupfs expects.
pub(crate) fn write_control(path: &Path, value: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(value.as_bytes())
}

/// Reads a control file; `None` if it is missing or unreadable.
pub(crate) fn read_control(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// True if the calling process may write `path` (mode bits, ownership and read-only mounts).
pub(crate) fn writable(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call; access() only
    // reads it.
    let ret = unsafe { libc::access(c_path.as_ptr(), libc::W_OK) };
    check(libc::c_long::from(ret)).is_ok()
}

/// Every pid in `dir/cgroup.procs` and in the `cgroup.procs` of its descendant cgroups.
pub(crate) fn member_pids(dir: &Path) -> Vec<libc::pid_t> {
    let mut pids = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        if let Some(text) = read_control(&current.join("cgroup.procs")) {
            pids.extend(parse::pid_list(&text));
        }
        stack.extend(child_dirs(&current));
    }
    pids
}

fn child_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect()
}

/// SIGKILLs `pid` if it is still a member of one of the cgroups `box_paths` (paths as
/// `/proc/<pid>/cgroup` shows them) or of a descendant.
///
/// The process is pinned with a pidfd before its membership is checked, so a pid that was
/// recycled after `cgroup.procs` was read is never signalled (on kernels without pidfds, ≥ 5.3,
/// a plain `kill` after the same check is used). Returns the pidfd of a process it signalled
/// (readable once the process has ended: see [`wait_ended`]); `None` when it signalled nothing
/// or had no pidfd to signal with.
pub(crate) fn kill_member(pid: libc::pid_t, box_paths: &[String]) -> Option<OwnedFd> {
    // SAFETY: getpid() has no preconditions and cannot fail.
    let own_pid = unsafe { libc::getpid() };
    if pid <= 0 || pid == own_pid {
        return None;
    }
    // SAFETY: pidfd_open takes a pid and a flags word by value; no memory is passed.
    let opened = check(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) });
    let pidfd = match opened {
        Ok(fd) => {
            let Ok(fd) = i32::try_from(fd) else {
                return None;
            };
            // SAFETY: the kernel returned a fresh file descriptor that nothing else owns.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => None,
        Err(_) => return None, // ESRCH: already gone.
    };
    if !is_member(pid, box_paths) {
        return None;
    }
    match pidfd {
        Some(fd) => {
            // SAFETY: `fd` is an open pidfd owned by this function; the siginfo pointer may be
            // null per pidfd_send_signal(2); flags are 0.
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
            check(ret).ok().map(|_| fd)
        }
        None => {
            // SAFETY: kill() takes plain integers; membership was checked just above.
            let ret = unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = check(libc::c_long::from(ret));
            None
        }
    }
}

/// Waits until every process behind `pidfds` has ended (each pidfd readable) or `until`
/// passes; whether they all ended.
pub(crate) fn wait_ended(pidfds: &[OwnedFd], until: Instant) -> bool {
    let fds: Vec<libc::c_int> = pidfds.iter().map(AsRawFd::as_raw_fd).collect();
    crate::sys::wait_readable(&fds, until)
}

fn is_member(pid: libc::pid_t, box_paths: &[String]) -> bool {
    read_control(Path::new(&format!("/proc/{pid}/cgroup")))
        .map(|text| {
            parse::parse_proc_cgroup(&text)
                .iter()
                .any(|e| box_paths.iter().any(|b| parse::path_is_within(&e.path, b)))
        })
        .unwrap_or(false)
}

/// Removes `dir` and any child cgroups, retrying while the kernel reports them busy (members
/// still exiting) until `deadline`. A missing directory counts as removed.
pub(crate) fn remove_tree(dir: &Path, deadline: Instant) -> io::Result<()> {
    for child in child_dirs(dir) {
        remove_tree(&child, deadline)?;
    }
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
}
