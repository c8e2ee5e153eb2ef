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
    /// Creates the namespace with a short-lived child that unshares it. Call from a
    /// single-threaded process.
    pub fn new() -> io::Result<IdmapNamespace> {
        IdmapNamespace::mapping(&[(0, BOX_HOST_ID)])
    }

    /// A namespace through which a mount shows files stored as `on_disk` (uid and gid) as
    /// owned by `shown`, and stores what `shown` creates as `on_disk`, for each pair (neither
    /// side may repeat). Single-threaded callers.
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
        // SAFETY: fork in a single-threaded process; the child only makes raw syscalls.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            let e = io::Error::last_os_error();
            for fd in [ready_r, ready_w, done_r, done_w] {
                crate::sys::close(fd);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: raw syscalls in the child, which then exits without returning.
            unsafe {
                // Keep only our ends, so the parent closing `done_w` reaches us as EOF.
                libc::close(ready_r);
                libc::close(done_w);
                let ok = libc::unshare(libc::CLONE_NEWUSER) == 0;
                let byte = [u8::from(ok)];
                libc::write(ready_w, byte.as_ptr().cast(), 1);
                let mut b = [0u8; 1];
                libc::read(done_r, b.as_mut_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        crate::sys::close(ready_w);
        crate::sys::close(done_r);
        let result = (|| {
            let mut byte = [0u8; 1];
            // SAFETY: reading one byte into a valid buffer.
            let n = unsafe { libc::read(ready_r, byte.as_mut_ptr().cast(), 1) };
            if n != 1 || byte[0] != 1 {
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
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        result
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
