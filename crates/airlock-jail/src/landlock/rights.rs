//! Which Landlock rights each ABI version knows, and which of them an [`FsAccess`] grant means.
//!
//! Pure functions of the ABI number, so the downgrade table is unit-tested for every ABI
//! without needing an old kernel.

use super::sys::{access_fs, access_net, scope};
use super::FsAccess;

/// Filesystem rights of ABI 1: `EXECUTE` (bit 0) through `MAKE_SYM` (bit 12).
const FS_ABI1: u64 = access_fs::EXECUTE
    | access_fs::WRITE_FILE
    | access_fs::READ_FILE
    | access_fs::READ_DIR
    | access_fs::REMOVE_DIR
    | access_fs::REMOVE_FILE
    | access_fs::MAKE_CHAR
    | access_fs::MAKE_DIR
    | access_fs::MAKE_REG
    | access_fs::MAKE_SOCK
    | access_fs::MAKE_FIFO
    | access_fs::MAKE_BLOCK
    | access_fs::MAKE_SYM;

/// Rights the kernel accepts on a rule whose parent is not a directory (`LANDLOCK_ACCESS_FILE`).
/// Anything else on a regular file makes `landlock_add_rule` fail with `EINVAL`.
const FS_FILE_RIGHTS: u64 = access_fs::EXECUTE
    | access_fs::WRITE_FILE
    | access_fs::READ_FILE
    | access_fs::TRUNCATE
    | access_fs::IOCTL_DEV;

/// Filesystem rights `abi` can handle (0 for ABI 0).
pub(super) fn fs_rights(abi: u32) -> u64 {
    let mut rights = 0;
    if abi >= 1 {
        rights |= FS_ABI1;
    }
    if abi >= 2 {
        rights |= access_fs::REFER;
    }
    if abi >= 3 {
        rights |= access_fs::TRUNCATE;
    }
    if abi >= 5 {
        rights |= access_fs::IOCTL_DEV;
    }
    rights
}

/// Network rights `abi` can handle (TCP bind and connect from ABI 4).
pub(super) fn net_rights(abi: u32) -> u64 {
    if abi >= 4 {
        access_net::BIND_TCP | access_net::CONNECT_TCP
    } else {
        0
    }
}

/// IPC scopes `abi` can handle (abstract UNIX sockets and signals from ABI 6).
pub(super) fn scopes(abi: u32) -> u64 {
    if abi >= 6 {
        scope::ABSTRACT_UNIX_SOCKET | scope::SIGNAL
    } else {
        0
    }
}

/// How many bytes of `landlock_ruleset_attr` to hand to a kernel of this ABI: exactly the
/// fields it knows (8 for ABI 1-3, 16 for ABI 4-5, 24 from ABI 6).
///
/// Kernels accept a longer struct only if the unknown tail is zero (`E2BIG` otherwise), and
/// zero-fill a shorter one; passing the known size keeps the request honest about what the
/// kernel will enforce. Verified against the running kernel in the tests.
pub(super) fn ruleset_attr_len(abi: u32) -> usize {
    match abi {
        0..=3 => 8,
        4 | 5 => 16,
        _ => super::sys::RULESET_ATTR_LEN,
    }
}

/// The rights an [`FsAccess`] grant stands for, limited to those the ruleset handles.
/// `ReadWrite` is every handled right, including `REFER` so files can move between
/// `ReadWrite` directories.
pub(super) fn grant(access: FsAccess, handled_fs: u64) -> u64 {
    let read = access_fs::READ_FILE | access_fs::READ_DIR;
    let wanted = match access {
        FsAccess::Read => read,
        FsAccess::ReadExec => read | access_fs::EXECUTE,
        FsAccess::ReadWrite => u64::MAX,
    };
    wanted & handled_fs
}

/// Drops the directory-only rights from a grant whose path is not a directory.
pub(super) fn for_non_directory(rights: u64) -> u64 {
    rights & FS_FILE_RIGHTS
}
