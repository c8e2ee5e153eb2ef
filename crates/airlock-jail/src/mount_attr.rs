//! mount_setattr(2): mount flags set on a whole tree at once, and idmappings.

use crate::sys::cvt_long;
use std::ffi::CStr;
use std::io;

pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets `set` on the mount at `dirfd`/`path` (`AT_EMPTY_PATH` in `flags` for the descriptor
/// itself; `AT_RECURSIVE` for every mount below it too). `userns_fd` is used with
/// [`MOUNT_ATTR_IDMAP`].
pub fn set(
    dirfd: libc::c_int,
    path: &CStr,
    flags: libc::c_int,
    set: u64,
    userns_fd: Option<libc::c_int>,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns_fd.map_or(0, |fd| fd as u64),
    };
    // SAFETY: path is a valid C string and attr a valid mount_attr of the size passed.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags as libc::c_uint,
            &attr,
            std::mem::size_of::<MountAttr>(),
        )
    })?;
    Ok(())
}
