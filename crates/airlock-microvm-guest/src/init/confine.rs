//! The agent's start, in the forked child of the init: into the pids cgroup, chrooted into the
//! box's root, limits set, every capability gone for good (bounding set emptied, securebits
//! locked so uid 0 regains nothing at exec, no new privileges: `airlock_jail::caps`, as in the
//! native box), the native box's seccomp filter installed, then the agent is executed from its
//! read-only bind in the box's root (given the box's root namespace at descriptor 4 when the
//! box has one). The init is single-threaded when it forks, and this
//! child only makes syscalls before `execve`.

use super::rootfs::NEW_ROOT;
use super::sys::{cstr, cvt, Result};
use crate::config::GuestConfig;
use airlock_jail::caps;
use airlock_jail::seccomp::SeccompProgram;
use std::os::fd::RawFd;

/// The pids cgroup the box's processes live in (outside the box's root).
pub const BOX_CGROUP: &str = "/cgroup/box";

/// Everything the child does between fork and exec. Returns only on failure.
pub fn exec_agent(
    cfg: &GuestConfig,
    conn: RawFd,
    root_ns: Option<RawFd>,
    filter: &SeccompProgram,
) -> super::sys::InitError {
    match confine_and_exec(cfg, conn, root_ns, filter) {
        Ok(()) => super::sys::InitError {
            what: "the agent returned from exec".into(),
            source: std::io::Error::other("impossible"),
        },
        Err(e) => e,
    }
}

fn confine_and_exec(
    cfg: &GuestConfig,
    conn: RawFd,
    root_ns: Option<RawFd>,
    filter: &SeccompProgram,
) -> Result<()> {
    if cfg.pids.is_some() {
        std::fs::write(format!("{BOX_CGROUP}/cgroup.procs"), b"0")
            .map_err(super::sys::io_err("cannot join the box's pids cgroup"))?;
    }
    // SAFETY: dup2 of two descriptors this process holds.
    cvt(unsafe { libc::dup2(conn, 3) }, || {
        "cannot place the agent's connection".into()
    })?;
    if let Some(ns) = root_ns {
        // SAFETY: dup2 of a descriptor this process holds (at 10 or above, so not 3).
        cvt(unsafe { libc::dup2(ns, 4) }, || {
            "cannot place the box's root namespace".into()
        })?;
    }
    let root = cstr(NEW_ROOT)?;
    // SAFETY: a valid path.
    cvt(unsafe { libc::chroot(root.as_ptr()) }, || {
        "cannot enter the box's root".into()
    })?;
    // The agent itself stays at "/" (every command it starts is given its own working
    // directory): a share it sat in could not be detached for a checkpoint.
    let slash = cstr("/")?;
    // SAFETY: a valid path.
    cvt(unsafe { libc::chdir(slash.as_ptr()) }, || {
        "cannot enter the box's root".into()
    })?;
    limit(libc::RLIMIT_NOFILE, cfg.open_files)?;
    limit(libc::RLIMIT_FSIZE, cfg.file_size)?;
    drop_privileges(cfg.uid, cfg.gid)?;
    // Last: the native box's own syscall filter (the guest kernel is the box's first wall; the
    // filter narrows what of it the box can reach).
    filter.install().map_err(|e| super::sys::InitError {
        what: "cannot install the syscall filter".into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let argv0 = cstr("airlock-agent")?;
    let fd_flag = cstr("--fd")?;
    let three = cstr("3")?;
    let root_flag = cstr("--root-ns-fd")?;
    let four = cstr("4")?;
    let argv_root = [
        argv0.as_ptr(),
        fd_flag.as_ptr(),
        three.as_ptr(),
        root_flag.as_ptr(),
        four.as_ptr(),
        std::ptr::null(),
    ];
    let argv_user = [
        argv0.as_ptr(),
        fd_flag.as_ptr(),
        three.as_ptr(),
        std::ptr::null(),
    ];
    let argv = match root_ns {
        Some(_) => argv_root.as_ptr(),
        None => argv_user.as_ptr(),
    };
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let path = cstr(super::rootfs::AGENT_INSIDE)?;
    // SAFETY: argv and envp are NULL-terminated arrays of valid strings that outlive the call.
    let ret = unsafe { libc::execve(path.as_ptr(), argv, envp.as_ptr()) };
    cvt(ret, || "cannot execute the agent".into()).map(|_| ())
}

fn limit(resource: libc::__rlimit_resource_t, value: u64) -> Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: a valid rlimit struct.
    cvt(unsafe { libc::setrlimit(resource, &lim) }, || {
        format!("cannot set limit {resource}")
    })
    .map(|_| ())
}

/// The box's identity, then no capability at all: the same steps (and code) as the native box.
fn drop_privileges(uid: u32, gid: u32) -> Result<()> {
    let groups = [gid];
    // SAFETY: one valid gid.
    cvt(unsafe { libc::setgroups(1, groups.as_ptr()) }, || {
        "cannot set the box's groups".into()
    })?;
    let err = |what: &'static str| {
        move |source| super::sys::InitError {
            what: what.into(),
            source,
        }
    };
    caps::become_user_keeping_caps(uid, gid).map_err(err("cannot become the box's user"))?;
    caps::drop_all().map_err(err("cannot drop every capability"))
}
