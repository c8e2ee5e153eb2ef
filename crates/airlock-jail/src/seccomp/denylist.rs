//! Syscalls refused by name with `EPERM`, shared by x86_64 and aarch64: escape, introspection and
//! host-reconfiguration primitives. Matching and row format: see `table.rs`.

use super::table::{nr, sys, Rule::*, SyscallRule};

/// Refused rows shared by all architectures.
pub(crate) const DENIED: &[SyscallRule] = &[
    sys!(
        SYS_ptrace,
        Deny,
        "debugging other processes reads and rewrites their memory"
    ),
    sys!(SYS_process_vm_readv, Deny, "reads another process's memory"),
    sys!(
        SYS_process_vm_writev,
        Deny,
        "writes another process's memory"
    ),
    sys!(
        SYS_pidfd_getfd,
        Deny,
        "steals a descriptor from another process"
    ),
    sys!(
        SYS_kcmp,
        Deny,
        "compares kernel objects of other processes; an info leak"
    ),
    sys!(
        SYS_process_madvise,
        Deny,
        "changes another process's memory"
    ),
    sys!(SYS_process_mrelease, Deny, "reaps another process's memory"),
    sys!(SYS_migrate_pages, Deny, "moves another process's memory"),
    sys!(SYS_move_pages, Deny, "moves another process's memory"),
    sys!(SYS_bpf, Deny, "eBPF is a large kernel attack surface"),
    sys!(
        SYS_perf_event_open,
        Deny,
        "perf is a large attack surface and a side channel"
    ),
    sys!(
        SYS_userfaultfd,
        Deny,
        "stalls kernel page faults; a standard exploit primitive"
    ),
    sys!(
        SYS_io_uring_setup,
        Deny,
        "io_uring bypasses seccomp for the calls it runs; many CVEs"
    ),
    sys!(
        SYS_io_uring_enter,
        Deny,
        "io_uring bypasses seccomp for the calls it runs"
    ),
    sys!(
        SYS_io_uring_register,
        Deny,
        "io_uring bypasses seccomp for the calls it runs"
    ),
    sys!(SYS_keyctl, Deny, "kernel keyrings are not namespaced"),
    sys!(SYS_add_key, Deny, "kernel keyrings are not namespaced"),
    sys!(SYS_request_key, Deny, "kernel keyrings are not namespaced"),
    sys!(
        SYS_mount,
        Deny,
        "changes the filesystem view the sandbox set up"
    ),
    sys!(SYS_umount2, Deny, "uncovers what the sandbox mounted over"),
    sys!(SYS_pivot_root, Deny, "changes the root the sandbox set up"),
    sys!(
        SYS_chroot,
        Deny,
        "changes the root; a step in classic chroot escapes"
    ),
    sys!(SYS_move_mount, Deny, "new mount API"),
    sys!(SYS_open_tree, Deny, "new mount API; clones mounts"),
    sys!(SYS_open_tree_attr, Deny, "new mount API; clones mounts"),
    sys!(SYS_fsopen, Deny, "new mount API"),
    sys!(SYS_fsconfig, Deny, "new mount API"),
    sys!(SYS_fsmount, Deny, "new mount API"),
    sys!(SYS_fspick, Deny, "new mount API"),
    sys!(
        SYS_mount_setattr,
        Deny,
        "changes mount flags such as read-only"
    ),
    sys!(
        SYS_unshare,
        Deny,
        "new namespaces expose kernel surface meant for root"
    ),
    sys!(
        SYS_open_by_handle_at,
        Deny,
        "opens files by handle, bypassing paths (shocker escape)"
    ),
    sys!(
        SYS_name_to_handle_at,
        Deny,
        "file handles for open_by_handle_at"
    ),
    sys!(SYS_kexec_load, Deny, "replaces the running kernel"),
    sys!(SYS_kexec_file_load, Deny, "replaces the running kernel"),
    sys!(SYS_init_module, Deny, "loads kernel code"),
    sys!(SYS_finit_module, Deny, "loads kernel code"),
    sys!(SYS_delete_module, Deny, "unloads kernel code"),
    sys!(SYS_reboot, Deny, "reboots the host"),
    sys!(SYS_swapon, Deny, "host swap configuration"),
    sys!(SYS_swapoff, Deny, "host swap configuration"),
    sys!(SYS_acct, Deny, "host process accounting"),
    sys!(SYS_quotactl, Deny, "host disk quotas"),
    sys!(SYS_quotactl_fd, Deny, "host disk quotas"),
    sys!(
        SYS_syslog,
        Deny,
        "kernel log leaks addresses and host activity"
    ),
    sys!(SYS_settimeofday, Deny, "host clock"),
    sys!(SYS_clock_settime, Deny, "host clock"),
    sys!(SYS_adjtimex, Deny, "host clock"),
    sys!(SYS_clock_adjtime, Deny, "host clock"),
    sys!(SYS_vhangup, Deny, "hangs up the controlling terminal"),
    sys!(SYS_fanotify_init, Deny, "filesystem-wide monitoring"),
    sys!(SYS_fanotify_mark, Deny, "filesystem-wide monitoring"),
    sys!(SYS_sethostname, Deny, "host identity"),
    sys!(SYS_setdomainname, Deny, "host identity"),
];
