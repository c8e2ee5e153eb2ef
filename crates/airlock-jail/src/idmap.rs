//! Idmapped mounts, so a box started by root never runs as host root's uid.
//!
//! When root starts a box, the box's user is mapped to an otherwise unused host uid
//! ([`BOX_HOST_ID`]) instead of uid 0. The workspace and other grants are then bind-mounted
//! through an idmapping that shows the caller's files (on-disk uid 0) to that uid and stores the
//! box's new files as uid 0 again, so they still belong to whoever ran airlock. Creating an
//! idmapped mount needs CAP_SYS_ADMIN over the filesystem, which is why the supervisor makes the
//! mounts (detached) and the box's init only attaches them.

use crate::sys::{cstring, cvt, cvt_long};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The host uid and gid of a root-started box's user: unused by any account.
pub const BOX_HOST_ID: u32 = 0x7000_0000;

const OPEN_TREE_CLONE: libc::c_uint = 0x1;
use crate::mount_attr::{MOUNT_ATTR_IDMAP, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

/// A user namespace mapping id 0 to [`BOX_HOST_ID`] (uid and gid), held open by a descriptor.
pub struct IdmapNamespace {
    fd: OwnedFd,
}

impl IdmapNamespace {
    /// Creates the namespace with a short-lived child that is born in it. Call from a
    /// single-threaded process.
    pub fn new() -> io::Result<IdmapNamespace> {
        IdmapNamespace::mapping(&[(0, BOX_HOST_ID)])
    }

    /// A namespace through which a mount shows files stored as `on_disk` (uid and gid) as
    /// owned by `shown`, and stores what `shown` creates as `on_disk`, for each pair (neither
    /// side may repeat). Single-threaded callers.
    ///
    /// The namespace needs a process to live in while its maps are written: a child cloned
    /// into it that shares this process's memory (`CLONE_VM`), so that starting it copies no
    /// page tables — a third of a millisecond less than a fork on every box start. The child
    /// runs only raw syscalls on its own stack, then exits.
    pub fn mapping(pairs: &[(u32, u32)]) -> io::Result<IdmapNamespace> {
        let map: String = pairs
            .iter()
            .map(|(on_disk, shown)| format!("{on_disk} {shown} 1\n"))
            .collect();
        let (ready_r, ready_w) = crate::sys::pipe()?;
        let (done_r, done_w) = match crate::sys::pipe() {
            Ok(p) => p,
            Err(e) => {
                crate::sys::close(ready_r);
                crate::sys::close(ready_w);
                return Err(e);
            }
        };
        let fds = HelperFds {
            ready_r,
            ready_w,
            done_r,
            done_w,
        };
        let mut stack = vec![0u8; HELPER_STACK];
        // The stack grows down from its (16-byte aligned) top.
        let top = {
            let end = stack.as_mut_ptr().wrapping_add(HELPER_STACK) as usize;
            (end & !15) as *mut libc::c_void
        };
        // SAFETY: the child runs `helper` on `stack`, which outlives it (we reap it below
        // before `stack` is dropped); it shares our memory but only reads `fds` (which also
        // outlives it) and makes raw syscalls. No CLONE_FILES: it has its own descriptor table.
        let pid = unsafe {
            libc::clone(
                helper,
                top,
                libc::CLONE_NEWUSER | libc::CLONE_VM | libc::SIGCHLD,
                &fds as *const HelperFds as *mut libc::c_void,
            )
        };
        if pid == -1 {
            let e = io::Error::last_os_error();
            for fd in [ready_r, ready_w, done_r, done_w] {
                crate::sys::close(fd);
            }
            return Err(e);
        }
        crate::sys::close(ready_w);
        crate::sys::close(done_r);
        let result = (|| {
            let mut byte = [0u8; 1];
            // SAFETY: reading one byte into a valid buffer.
            let n = unsafe { libc::read(ready_r, byte.as_mut_ptr().cast(), 1) };
            if n != 1 {
                return Err(io::Error::other(
                    "the helper could not create a user namespace",
                ));
            }
            std::fs::write(format!("/proc/{pid}/uid_map"), &map)?;
            std::fs::write(format!("/proc/{pid}/gid_map"), &map)?;
            let f = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
            Ok(IdmapNamespace {
                fd: OwnedFd::from(f),
            })
        })();
        crate::sys::close(ready_r);
        crate::sys::close(done_w);
        let mut status = 0;
        // SAFETY: reaping our own child; until it has exited, `stack` and `fds` stay alive.
        while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        drop(stack);
        result
    }
}

/// The idmap helper's stack: it makes five raw syscalls.
const HELPER_STACK: usize = 64 * 1024;

/// The pipes between [`IdmapNamespace::mapping`] and its helper.
#[repr(C)]
struct HelperFds {
    ready_r: libc::c_int,
    ready_w: libc::c_int,
    done_r: libc::c_int,
    done_w: libc::c_int,
}

/// The helper, born in the new user namespace: says it is there, then waits for the maps to
/// be written and its namespace opened (EOF on `done_r`), and exits.
extern "C" fn helper(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's HelperFds, alive until this child is reaped; it is
    // read once, before the parent is told to go on. Only raw syscalls follow.
    unsafe {
        let fds = &*(arg as *const HelperFds);
        let (ready_r, ready_w, done_r, done_w) = (fds.ready_r, fds.ready_w, fds.done_r, fds.done_w);
        // Keep only our ends, so the parent closing `done_w` reaches us as EOF.
        libc::close(ready_r);
        libc::close(done_w);
        let byte = [1u8];
        libc::write(ready_w, byte.as_ptr().cast(), 1);
        let mut b = [0u8; 1];
        libc::read(done_r, b.as_mut_ptr().cast(), 1);
        libc::_exit(0)
    }
}

/// A detached, recursive copy of `source`, idmapped through `ns`, nosuid and nodev, read-only
/// if asked. The box's init attaches it with [`attach`].
pub fn idmapped_tree(source: &Path, ns: &IdmapNamespace, read_only: bool) -> io::Result<OwnedFd> {
    let p = cstring(source.as_os_str().as_bytes())?;
    let flags =
        OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint;
    // SAFETY: p is a valid C string; open_tree returns a new descriptor or -1.
    let fd =
        cvt_long(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, p.as_ptr(), flags) })?
            as libc::c_int;
    // SAFETY: fd is a fresh descriptor we own.
    let tree = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if read_only {
        set |= MOUNT_ATTR_RDONLY;
    }
    let empty = cstring("")?;
    crate::mount_attr::set(
        tree.as_raw_fd(),
        &empty,
        libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
        set,
        Some(ns.fd.as_raw_fd()),
    )?;
    Ok(tree)
}

/// Attaches a detached tree at `target` (which must exist).
pub fn attach(tree: libc::c_int, target: &Path) -> io::Result<()> {
    let t = cstring(target.as_os_str().as_bytes())?;
    let empty = cstring("")?;
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    // SAFETY: tree is a detached mount descriptor; t and empty are valid C strings.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            empty.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) as libc::c_int
    })?;
    Ok(())
}
