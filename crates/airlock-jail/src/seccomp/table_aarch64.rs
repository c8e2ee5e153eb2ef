//! aarch64-only rows. aarch64 has only the generic syscall table, so the shared rows in
//! `table.rs` cover nearly everything; these are the few LP64-only calls libc does not name.
//! Same format and matching as `table.rs`.

use super::table::{sys, Rule, SyscallRule};
use Rule::*;

/// Audit architecture of the native aarch64 ABI (EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub(crate) const AUDIT_ARCH: u32 = 0xC000_00B7;

/// aarch64 has no second ABI sharing its audit arch.
pub(crate) const X32_SYSCALL_BIT: Option<u32> = None;

/// Numbers from the kernel's asm-generic table (LP64) that libc leaves out.
#[allow(non_upper_case_globals)]
mod nr {
    use libc::c_long;
    pub(crate) const SYS_sync_file_range: c_long = 84;
    pub(crate) const SYS_getrlimit: c_long = 163;
    pub(crate) const SYS_setrlimit: c_long = 164;
}

/// Rows only aarch64 has.
pub(crate) const ARCH: &[SyscallRule] = &[
    sys!(SYS_getrlimit, Allow, "read resource limits"),
    sys!(
        SYS_setrlimit,
        Allow,
        "lower resource limits; raising past the hard limit needs privilege"
    ),
    sys!(SYS_sync_file_range, Allow, "flush a file range"),
];
