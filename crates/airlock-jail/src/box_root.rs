//! The box's `root`: uid 0 of a user namespace nested in the box's own, whose only mapped user
//! and group are the box user's. A process that joins it is called root and owns what the box
//! user owns (files the box user made show as root's) — and nothing more:
//!
//! - the box user already holds every capability in a namespace it owns, so joining gives no
//!   power a box process did not have; and capabilities in a child namespace never reach
//!   anything the box's own namespace (or the host's) owns: mounts, the network, the host name,
//!   other users' files;
//! - [`enter`] drops the full capability set the kernel hands a process joining a namespace, so
//!   root runs without capabilities, under the box's Landlock domain and seccomp filter, which
//!   the join keeps; no_new_privs keeps exec from granting any back.
//!
//! Made once per box by its init ([`make`], before init restricts itself: the namespace is
//! created by a short-lived child, as `unshare` is refused inside the box), then joined by each
//! root process between fork and exec (the seccomp filter allows `setns` for user namespaces
//! only).
//!
//! A kernel that cannot join a user namespace (gVisor's Sentry answers `setns` into one with
//! `EINVAL`) gets [`OwnRoot`] instead: each root process makes a namespace of its own with the
//! same single mapping, between fork and exec and before its seccomp filter is installed. Root
//! is then the same user by the same name, with the same files; only its processes of
//! different commands are not in one namespace (they still see and signal each other as the
//! box user's).

use crate::sys::{cvt, write_all};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Who makes the namespace: its owner must be the box user, as only the owner's processes may
/// join it without holding capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maker {
    /// The caller already is the box user (the native init, an agent started as the box user).
    AsCaller,
    /// The caller is a privileged init (a VM guest's): its short-lived child becomes the box
    /// user (groups, gid, uid) before it makes the namespace.
    BecomeBoxUser,
}

/// Makes the nested namespace: uid 0 → `uid`, gid 0 → `gid` (both as the caller's namespace
/// sees them), `setgroups` refused. Must run before the caller restricts itself (seccomp
/// refuses `unshare`) and outside any chroot (the kernel refuses a new user namespace there),
/// with the caller's own /proc mounted. The child it forks is gone when this returns.
pub fn make(uid: u32, gid: u32, maker: Maker) -> io::Result<OwnedFd> {
    let mut ready = [0 as libc::c_int; 2];
    // SAFETY: ready is a valid array of two ints for pipe2 to fill.
    cvt(unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 just returned these two descriptors; nothing else owns them.
    let (ready_r, ready_w) = unsafe {
        (
            OwnedFd::from_raw_fd(ready[0]),
            OwnedFd::from_raw_fd(ready[1]),
        )
    };
    // SAFETY: the box's init is single-threaded; the child only makes syscalls and exits.
    let pid = cvt(unsafe { libc::fork() })?;
    if pid == 0 {
        if maker == Maker::BecomeBoxUser {
            let groups = [gid];
            // SAFETY: setgroups/setresgid/setresuid with a valid one-gid array and integers.
            let became = unsafe {
                libc::setgroups(1, groups.as_ptr()) == 0
                    && libc::setresgid(gid, gid, gid) == 0
                    && libc::setresuid(uid, uid, uid) == 0
            };
            if !became {
                let code = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO) as u8;
                let _ = write_all(ready_w.as_raw_fd(), &[code]);
                // SAFETY: ends the forked child without running the parent's destructors.
                unsafe { libc::_exit(1) };
            }
        }
        // Init is not dumpable (nor is a process that changed its uid), so this copy's /proc
        // files would belong to the host's root and its maps could not be written. Nothing else runs in the box yet, and init's secrets
        // are already wiped from this memory.
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
        // SAFETY: unshare with a flag; the result is reported as one byte (0 or the errno).
        let code = if unsafe { libc::unshare(libc::CLONE_NEWUSER) } == -1 {
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as u8
        } else {
            0
        };
        let _ = write_all(ready_w.as_raw_fd(), &[code]);
        // Wait to be killed: the namespace must live until the parent holds a descriptor.
        loop {
            // SAFETY: pause has no arguments.
            unsafe { libc::pause() };
        }
    }
    drop(ready_w);
    let made = (|| {
        let mut byte = [1u8; 1];
        // SAFETY: byte is a valid 1-byte buffer.
        let n = unsafe { libc::read(ready_r.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        match (n, byte[0]) {
            (1, 0) => {}
            (1, errno) => return Err(io::Error::from_raw_os_error(i32::from(errno))),
            _ => {
                return Err(io::Error::other(
                    "the namespace's maker ended before it reported",
                ))
            }
        }
        let write = |file: &str, text: &str| -> io::Result<()> {
            std::fs::write(format!("/proc/{pid}/{file}"), text).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("write {file} of the box's root namespace: {e}"),
                )
            })
        };
        write("uid_map", &format!("0 {uid} 1\n"))?;
        write("setgroups", "deny\n")?;
        write("gid_map", &format!("0 {gid} 1\n"))?;
        let ns = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
        Ok(OwnedFd::from(ns))
    })();
    // SAFETY: pid is our own child; kill and waitpid with integer arguments.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    made
}

/// A root namespace of the calling process's own ([`OwnRoot::enter`]), for kernels that cannot
/// join one. Holds its map lines, made before the fork, so entering allocates nothing.
#[derive(Debug, Clone)]
pub struct OwnRoot {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl OwnRoot {
    /// Root as uid 0 → `uid`, gid 0 → `gid`: the caller's own ids (the box user's), which is
    /// all an unprivileged process may map.
    pub fn new(uid: u32, gid: u32) -> OwnRoot {
        OwnRoot {
            uid_map: format!("0 {uid} 1\n").into_bytes(),
            gid_map: format!("0 {gid} 1\n").into_bytes(),
        }
    }

    /// Makes the calling process the box's root: a new user namespace, its maps written by the
    /// process itself (`setgroups` denied first where the kernel has the file), every
    /// capability the new namespace gave dropped (as the Sentry can: no ambient set or
    /// securebits there, see [`crate::caps::drop_all_in_sentry`]). For the child between fork
    /// and exec, before seccomp (which refuses `unshare`): syscalls only, no allocation.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: unshare with a namespace-type flag.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
        write_proc(c"/proc/self/uid_map", &self.uid_map, false)?;
        write_proc(c"/proc/self/setgroups", b"deny\n", true)?;
        write_proc(c"/proc/self/gid_map", &self.gid_map, false)?;
        crate::caps::drop_all_in_sentry()
    }
}

/// Writes `text` to the /proc file at `path`; a file the kernel does not have is fine when
/// `optional` (gVisor has no `setgroups`). Syscalls only.
fn write_proc(path: &std::ffi::CStr, text: &[u8], optional: bool) -> io::Result<()> {
    // SAFETY: path is a NUL-terminated string; open with integer flags.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd == -1 {
        let err = io::Error::last_os_error();
        return match (optional, err.raw_os_error()) {
            (true, Some(libc::ENOENT)) => Ok(()),
            _ => Err(err),
        };
    }
    let wrote = write_all(fd, text);
    // SAFETY: fd is the descriptor we just opened.
    unsafe { libc::close(fd) };
    wrote
}

/// Makes the calling process the box's root: joins `ns` (from [`make`]) and drops every
/// capability the join gave. For the child between fork and exec: syscalls only, no allocation.
pub fn enter(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns on a descriptor the caller holds, with a namespace-type flag.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWUSER) })?;
    crate::caps::drop_all()
}
