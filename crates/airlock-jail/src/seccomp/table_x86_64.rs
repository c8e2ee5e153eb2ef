//! x86_64-only rows: legacy syscalls that newer architectures replaced with `*at` forms, and
//! x86-specific hardware access. Same format and matching as `table.rs`.

use super::table::{nr, sys, ArgCheck::NoSetIdMode, Rule, SyscallRule};
use Rule::*;

/// Audit architecture of the native x86_64 ABI (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub(crate) const AUDIT_ARCH: u32 = 0xC000_003E;

/// x32 syscalls are x86_64 numbers with this bit set; the filter refuses all of them, because
/// they share `AUDIT_ARCH_X86_64` and would otherwise dodge rules keyed on the plain number.
pub(crate) const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);

/// Rows only x86_64 has.
pub(crate) const ARCH: &[SyscallRule] = &[
    sys!(
        SYS_open,
        Check(NoSetIdMode(2)),
        "legacy open; no set-ID create mode"
    ),
    sys!(
        SYS_creat,
        Check(NoSetIdMode(1)),
        "legacy create; no set-ID mode"
    ),
    sys!(SYS_stat, Allow, "legacy stat"),
    sys!(SYS_lstat, Allow, "legacy lstat"),
    sys!(SYS_access, Allow, "legacy access check"),
    sys!(SYS_readlink, Allow, "legacy readlink"),
    sys!(SYS_getdents, Allow, "legacy directory listing"),
    sys!(SYS_poll, Allow, "legacy poll"),
    sys!(SYS_select, Allow, "legacy select"),
    sys!(SYS_pipe, Allow, "legacy pipe"),
    sys!(SYS_dup2, Allow, "legacy dup2 (shell redirections)"),
    sys!(SYS_fork, Allow, "legacy fork; no namespace flags possible"),
    sys!(
        SYS_vfork,
        Allow,
        "vfork (posix_spawn, python subprocess); no namespace flags possible"
    ),
    sys!(
        SYS_arch_prctl,
        Allow,
        "thread-local storage setup (FS/GS base)"
    ),
    sys!(SYS_mkdir, Allow, "legacy mkdir"),
    sys!(SYS_rmdir, Allow, "legacy rmdir"),
    sys!(SYS_rename, Allow, "legacy rename"),
    sys!(SYS_renameat, Allow, "rename relative to a directory"),
    sys!(SYS_unlink, Allow, "legacy unlink"),
    sys!(SYS_link, Allow, "legacy hard link"),
    sys!(SYS_symlink, Allow, "legacy symlink"),
    sys!(
        SYS_chmod,
        Check(NoSetIdMode(1)),
        "legacy chmod; set-ID bits refused"
    ),
    sys!(SYS_chown, Allow, "legacy chown"),
    sys!(SYS_lchown, Allow, "legacy lchown"),
    sys!(
        SYS_mknod,
        Check(NoSetIdMode(1)),
        "legacy mknod; device nodes need CAP_MKNOD; no set-ID mode"
    ),
    sys!(SYS_utime, Allow, "legacy timestamps"),
    sys!(SYS_utimes, Allow, "legacy timestamps"),
    sys!(SYS_futimesat, Allow, "legacy timestamps"),
    sys!(SYS_inotify_init, Allow, "legacy inotify"),
    sys!(SYS_epoll_create, Allow, "legacy epoll"),
    sys!(SYS_epoll_wait, Allow, "legacy epoll wait"),
    sys!(SYS_eventfd, Allow, "legacy eventfd"),
    sys!(SYS_signalfd, Allow, "legacy signalfd"),
    sys!(SYS_getpgrp, Allow, "process group (shells)"),
    sys!(SYS_pause, Allow, "wait for a signal"),
    sys!(SYS_alarm, Allow, "alarm timer"),
    sys!(SYS_time, Allow, "legacy time"),
    sys!(SYS_getrlimit, Allow, "read resource limits"),
    sys!(
        SYS_setrlimit,
        Allow,
        "lower resource limits; raising past the hard limit needs privilege"
    ),
    sys!(SYS_sync_file_range, Allow, "flush a file range"),
    sys!(SYS_iopl, Deny, "raw I/O port access"),
    sys!(SYS_ioperm, Deny, "raw I/O port access"),
    sys!(
        SYS_modify_ldt,
        Deny,
        "LDT changes; a history of kernel bugs and unused by normal programs"
    ),
    sys!(SYS_uselib, Deny, "obsolete a.out loader"),
    sys!(SYS_nfsservctl, Deny, "obsolete kernel NFS server control"),
    sys!(SYS_lookup_dcookie, Deny, "kernel profiling interface"),
];
