//! The agent's start, in the forked child of the init: into the pids cgroup, chrooted into the
//! box's root, limits set, every capability gone for good (bounding set emptied, securebits
//! locked so uid 0 regains nothing at exec, no new privileges), then the agent is executed from
//! its read-only bind in the box's root. The init is single-threaded when it forks, and this
//! child only makes syscalls before `execve`.

use super::rootfs::NEW_ROOT;
use super::sys::{cstr, cvt, Result};
use crate::config::GuestConfig;
use std::os::fd::RawFd;

/// The pids cgroup the box's processes live in (outside the box's root).
pub const BOX_CGROUP: &str = "/cgroup/box";

/// Highest capability number to drop from the bounding set (more than any kernel has).
const CAP_LAST: libc::c_ulong = 63;

// Securebits (linux/securebits.h): uid 0 is not special at exec and on setuid, and it stays so.
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Everything the child does between fork and exec. Returns only on failure.
pub fn exec_agent(cfg: &GuestConfig, conn: RawFd) -> super::sys::InitError {
    match confine_and_exec(cfg, conn) {
        Ok(()) => super::sys::InitError {
            what: "the agent returned from exec".into(),
            source: std::io::Error::other("impossible"),
        },
        Err(e) => e,
    }
}

fn confine_and_exec(cfg: &GuestConfig, conn: RawFd) -> Result<()> {
    if cfg.pids.is_some() {
        std::fs::write(format!("{BOX_CGROUP}/cgroup.procs"), b"0")
            .map_err(super::sys::io_err("cannot join the box's pids cgroup"))?;
    }
    // SAFETY: dup2 of two descriptors this process holds.
    cvt(unsafe { libc::dup2(conn, 3) }, || {
        "cannot place the agent's connection".into()
    })?;
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
    let argv0 = cstr("airlock-agent")?;
    let fd_flag = cstr("--fd")?;
    let three = cstr("3")?;
    let argv = [
        argv0.as_ptr(),
        fd_flag.as_ptr(),
        three.as_ptr(),
        std::ptr::null(),
    ];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let path = cstr(super::rootfs::AGENT_INSIDE)?;
    // SAFETY: argv and envp are NULL-terminated arrays of valid strings that outlive the call.
    let ret = unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
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

fn drop_privileges(uid: u32, gid: u32) -> Result<()> {
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integer arguments.
    let ret = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) };
    cvt(ret, || "cannot lock the securebits".into())?;
    for cap in 0..=CAP_LAST {
        // SAFETY: prctl with integer arguments; numbers past the kernel's last cap fail with
        // EINVAL, which ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } == -1 {
            break;
        }
    }
    let clear = libc::PR_CAP_AMBIENT_CLEAR_ALL;
    // SAFETY: prctl with integer arguments.
    let ret = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, clear, 0, 0, 0) };
    cvt(ret, || "cannot clear ambient capabilities".into())?;
    let groups = [gid];
    // SAFETY: one valid gid.
    cvt(unsafe { libc::setgroups(1, groups.as_ptr()) }, || {
        "cannot set the box's groups".into()
    })?;
    // SAFETY: plain ids.
    cvt(unsafe { libc::setresgid(gid, gid, gid) }, || {
        "cannot set the box's gid".into()
    })?;
    // SAFETY: plain ids.
    cvt(unsafe { libc::setresuid(uid, uid, uid) }, || {
        "cannot set the box's uid".into()
    })?;
    let mut head = CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset with a v3 header and two zeroed data structs.
    let ret = unsafe { libc::syscall(libc::SYS_capset, &mut head, data.as_ptr()) };
    cvt(ret as libc::c_int, || "cannot drop every capability".into())?;
    // SAFETY: prctl with integer arguments.
    let ret = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    cvt(ret, || "cannot forbid new privileges".into())?;
    Ok(())
}
