//! The Landlock kernel interface: UAPI constants, the three argument structs and the three
//! syscalls, each turned into an `io::Result` by [`check`].
//!
//! Mirrors `include/uapi/linux/landlock.h`. Nothing here allocates, so [`set_no_new_privs`] and
//! [`restrict_self`] are safe to call between `fork` and `exec`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;
/// `LANDLOCK_RULE_NET_PORT`.
const RULE_NET_PORT: libc::c_int = 2;

/// `LANDLOCK_ACCESS_FS_*`, with the ABI that introduced each right.
pub(super) mod access_fs {
    /// ABI 1: execute a file.
    pub const EXECUTE: u64 = 1 << 0;
    /// ABI 1: open a file with write access.
    pub const WRITE_FILE: u64 = 1 << 1;
    /// ABI 1: open a file with read access.
    pub const READ_FILE: u64 = 1 << 2;
    /// ABI 1: open a directory or list its content.
    pub const READ_DIR: u64 = 1 << 3;
    /// ABI 1: remove an empty directory or rename one.
    pub const REMOVE_DIR: u64 = 1 << 4;
    /// ABI 1: unlink (or rename) a file.
    pub const REMOVE_FILE: u64 = 1 << 5;
    /// ABI 1: create (or rename or link) a character device.
    pub const MAKE_CHAR: u64 = 1 << 6;
    /// ABI 1: create (or rename) a directory.
    pub const MAKE_DIR: u64 = 1 << 7;
    /// ABI 1: create (or rename or link) a regular file.
    pub const MAKE_REG: u64 = 1 << 8;
    /// ABI 1: create (or rename or link) a UNIX domain socket.
    pub const MAKE_SOCK: u64 = 1 << 9;
    /// ABI 1: create (or rename or link) a named pipe.
    pub const MAKE_FIFO: u64 = 1 << 10;
    /// ABI 1: create (or rename or link) a block device.
    pub const MAKE_BLOCK: u64 = 1 << 11;
    /// ABI 1: create (or rename or link) a symbolic link.
    pub const MAKE_SYM: u64 = 1 << 12;
    /// ABI 2: link or rename a file from or to a different directory.
    pub const REFER: u64 = 1 << 13;
    /// ABI 3: truncate a file.
    pub const TRUNCATE: u64 = 1 << 14;
    /// ABI 5: `ioctl` on character or block devices.
    pub const IOCTL_DEV: u64 = 1 << 15;
}

/// `LANDLOCK_ACCESS_NET_*` (ABI 4).
pub(super) mod access_net {
    /// Bind a TCP socket to a local port.
    pub const BIND_TCP: u64 = 1 << 0;
    /// Connect a TCP socket to a remote port.
    pub const CONNECT_TCP: u64 = 1 << 1;
}

/// `LANDLOCK_SCOPE_*` (ABI 6).
pub(super) mod scope {
    /// Refuse connecting to abstract UNIX sockets created outside the domain.
    pub const ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
    /// Refuse sending signals to processes outside the domain.
    pub const SIGNAL: u64 = 1 << 1;
}

/// `struct landlock_ruleset_attr`. The kernel reads only the first `size` bytes it is given and
/// treats the rest as zero; `size` must cover at least `handled_access_fs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct RulesetAttr {
    pub handled_access_fs: u64,
    pub handled_access_net: u64,
    pub scoped: u64,
}

/// Byte length of `struct landlock_ruleset_attr` as of ABI 6.
pub(super) const RULESET_ATTR_LEN: usize = 24;

impl RulesetAttr {
    /// The struct in the kernel's layout (three native-endian `__u64`, no padding).
    pub fn to_bytes(self) -> [u8; RULESET_ATTR_LEN] {
        let mut bytes = [0u8; RULESET_ATTR_LEN];
        bytes[0..8].copy_from_slice(&self.handled_access_fs.to_ne_bytes());
        bytes[8..16].copy_from_slice(&self.handled_access_net.to_ne_bytes());
        bytes[16..24].copy_from_slice(&self.scoped.to_ne_bytes());
        bytes
    }
}

/// `struct landlock_path_beneath_attr` (packed in the UAPI header: 12 bytes).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `struct landlock_net_port_attr`.
#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// Turns a raw syscall return value into `Ok(value)` or the `errno` it reported.
/// Never allocates (`last_os_error` is a plain OS code).
fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The Landlock ABI version of the running kernel, or 0 when Landlock is not built in or not
/// enabled at boot (`ENOSYS` / `EOPNOTSUPP`).
pub(super) fn abi_version() -> u32 {
    // SAFETY: with a NULL attr, size 0 and the VERSION flag the kernel reads no memory and only
    // returns the ABI version (or an error); no file descriptor is created.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    check(ret)
        .ok()
        .and_then(|abi| u32::try_from(abi).ok())
        .unwrap_or(0)
}

/// Creates a ruleset from the first `attr.len()` bytes of a `landlock_ruleset_attr`.
/// Exposed as bytes so callers (and tests) control the size the kernel sees.
pub(super) fn create_ruleset(attr: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a live, initialised buffer of exactly `attr.len()` bytes; the kernel copies
    // at most that many bytes and keeps no reference to it.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            attr.as_ptr().cast::<libc::c_void>(),
            attr.len(),
            0 as libc::c_uint,
        )
    };
    let fd = libc::c_int::try_from(check(ret)?)
        .map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: on success the kernel returned a new O_CLOEXEC file descriptor that nothing else
    // owns; OwnedFd takes sole ownership and closes it on drop.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Allows `allowed_access` beneath the file or directory open as `parent` (an `O_PATH` fd is fine).
pub(super) fn add_path_beneath_rule(
    ruleset: BorrowedFd<'_>,
    allowed_access: u64,
    parent: BorrowedFd<'_>,
) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: `attr` is a live `landlock_path_beneath_attr` in the UAPI layout (packed) for the
    // duration of the call; both file descriptors are borrowed and therefore open.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            std::ptr::addr_of!(attr).cast::<libc::c_void>(),
            0 as libc::c_uint,
        )
    };
    check(ret).map(drop)
}

/// Allows `allowed_access` (network rights) for TCP `port`.
pub(super) fn add_net_port_rule(
    ruleset: BorrowedFd<'_>,
    allowed_access: u64,
    port: u16,
) -> io::Result<()> {
    let attr = NetPortAttr {
        allowed_access,
        port: u64::from(port),
    };
    // SAFETY: `attr` is a live `landlock_net_port_attr` in the UAPI layout for the duration of the
    // call; the ruleset descriptor is borrowed and therefore open.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_NET_PORT,
            std::ptr::addr_of!(attr).cast::<libc::c_void>(),
            0 as libc::c_uint,
        )
    };
    check(ret).map(drop)
}

/// Sets `PR_SET_NO_NEW_PRIVS`, which `landlock_restrict_self` requires of unprivileged callers.
/// Idempotent; cannot be undone.
pub(super) fn set_no_new_privs() -> io::Result<()> {
    let (on, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
    // SAFETY: PR_SET_NO_NEW_PRIVS takes only integer arguments and touches no caller memory.
    let ret = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, on, unused, unused, unused) };
    check(libc::c_long::from(ret)).map(drop)
}

/// Enforces `ruleset` on the calling thread (and on everything it later forks or execs).
pub(super) fn restrict_self(ruleset: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: integer-only syscall on a borrowed (hence open) ruleset descriptor; no caller memory
    // is read or written.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0 as libc::c_uint,
        )
    };
    check(ret).map(drop)
}
