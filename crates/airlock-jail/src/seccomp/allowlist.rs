//! Syscalls every box may make, shared by x86_64 and aarch64, one row and reason each.
//! Some are allowed only for certain arguments (`Check`); `compile.rs` has the exact checks.
//! Matching and row format: see `table.rs`. Frequent syscalls come first.

use super::table::{nr, sys, ArgCheck::*, Rule::*, SyscallRule};

/// Allowed (and argument-checked) rows shared by all architectures.
pub(crate) const ALLOWED: &[SyscallRule] = &[
    // --- hot path: I/O, memory, synchronisation ---
    sys!(SYS_read, Allow, "read from a file descriptor"),
    sys!(SYS_write, Allow, "write to a file descriptor"),
    sys!(
        SYS_futex,
        Allow,
        "thread synchronisation (mutexes, condition variables, joins)"
    ),
    sys!(SYS_close, Allow, "close a file descriptor"),
    sys!(
        SYS_openat,
        Check(NoSetIdMode(3)),
        "open files; reach is limited by the mount namespace and Landlock; no set-ID create mode"
    ),
    sys!(SYS_newfstatat, Allow, "stat a path"),
    sys!(SYS_fstat, Allow, "stat an open file"),
    sys!(
        SYS_statx,
        Allow,
        "extended stat used by coreutils and glibc"
    ),
    sys!(SYS_lseek, Allow, "seek in a file"),
    sys!(SYS_mmap, Allow, "map memory and files"),
    sys!(SYS_munmap, Allow, "unmap memory"),
    sys!(
        SYS_mprotect,
        Allow,
        "change page protections (dynamic loader, JITs)"
    ),
    sys!(SYS_brk, Allow, "grow the heap"),
    sys!(SYS_rt_sigaction, Allow, "install signal handlers"),
    sys!(SYS_rt_sigprocmask, Allow, "block and unblock signals"),
    sys!(SYS_rt_sigreturn, Allow, "return from a signal handler"),
    sys!(
        SYS_ioctl,
        Check(IoctlRequest),
        "terminal and device control; TIOCSTI/TIOCLINUX refused"
    ),
    sys!(SYS_pread64, Allow, "positional read"),
    sys!(SYS_pwrite64, Allow, "positional write"),
    sys!(SYS_readv, Allow, "vectored read"),
    sys!(SYS_writev, Allow, "vectored write"),
    sys!(SYS_getdents64, Allow, "list a directory"),
    sys!(SYS_fcntl, Allow, "file descriptor flags and record locks"),
    sys!(SYS_faccessat, Allow, "check access to a path"),
    sys!(
        SYS_faccessat2,
        Allow,
        "check access to a path (flags variant used by glibc)"
    ),
    sys!(SYS_readlinkat, Allow, "read a symlink"),
    sys!(
        SYS_getrandom,
        Allow,
        "random bytes for hashing seeds and crypto"
    ),
    sys!(SYS_madvise, Allow, "memory usage hints from allocators"),
    sys!(SYS_mremap, Allow, "grow or move a mapping (realloc)"),
    sys!(
        SYS_epoll_pwait,
        Allow,
        "wait for events (node, python asyncio)"
    ),
    sys!(
        SYS_epoll_pwait2,
        Allow,
        "wait for events with a timespec timeout"
    ),
    sys!(SYS_epoll_ctl, Allow, "register events"),
    sys!(SYS_epoll_create1, Allow, "create an event queue"),
    sys!(SYS_ppoll, Allow, "wait for file descriptors"),
    sys!(SYS_pselect6, Allow, "wait for file descriptors (select)"),
    sys!(SYS_clock_gettime, Allow, "read clocks"),
    sys!(SYS_clock_getres, Allow, "clock resolution"),
    sys!(SYS_clock_nanosleep, Allow, "sleep"),
    sys!(SYS_nanosleep, Allow, "sleep"),
    sys!(SYS_gettimeofday, Allow, "read the wall clock"),
    // --- process lifecycle ---
    sys!(
        SYS_clone,
        Check(CloneFlags),
        "fork and threads; namespace flags refused"
    ),
    sys!(
        SYS_clone3,
        Unsupported,
        "flags live in memory BPF cannot read; ENOSYS makes glibc use clone"
    ),
    sys!(SYS_execve, Allow, "run a program"),
    sys!(SYS_execveat, Allow, "run a program from a directory fd"),
    sys!(SYS_exit, Allow, "end a thread"),
    sys!(SYS_exit_group, Allow, "end the process"),
    sys!(SYS_wait4, Allow, "reap children"),
    sys!(SYS_waitid, Allow, "reap children"),
    sys!(SYS_set_tid_address, Allow, "thread startup (glibc)"),
    sys!(
        SYS_set_robust_list,
        Allow,
        "robust futex list (glibc thread startup)"
    ),
    sys!(SYS_rseq, Allow, "restartable sequences registered by glibc"),
    sys!(
        SYS_membarrier,
        Allow,
        "process-wide memory barriers (JITs, userspace RCU)"
    ),
    sys!(
        SYS_prctl,
        Check(PrctlOption),
        "thread names, no_new_privs, dumpable; PR_SET_MM refused"
    ),
    sys!(
        SYS_setns,
        Check(SetnsUserOnly),
        "join the box's root namespace (a user namespace); other kinds refused"
    ),
    sys!(
        SYS_personality,
        Check(PersonalityQuery),
        "query only; changing persona can disable ASLR"
    ),
    sys!(SYS_getpid, Allow, "own process id"),
    sys!(SYS_getppid, Allow, "parent process id"),
    sys!(SYS_gettid, Allow, "own thread id"),
    sys!(SYS_getuid, Allow, "own user id"),
    sys!(SYS_geteuid, Allow, "own effective user id"),
    sys!(SYS_getgid, Allow, "own group id"),
    sys!(SYS_getegid, Allow, "own effective group id"),
    sys!(SYS_getresuid, Allow, "own user ids"),
    sys!(SYS_getresgid, Allow, "own group ids"),
    sys!(SYS_getgroups, Allow, "supplementary groups"),
    sys!(
        SYS_setuid,
        Allow,
        "drop privileges; no_new_privs stops any gain"
    ),
    sys!(SYS_setgid, Allow, "drop privileges"),
    sys!(SYS_setreuid, Allow, "drop privileges"),
    sys!(SYS_setregid, Allow, "drop privileges"),
    sys!(SYS_setresuid, Allow, "drop privileges"),
    sys!(SYS_setresgid, Allow, "drop privileges"),
    sys!(
        SYS_setfsuid,
        Allow,
        "filesystem uid (file servers, sudo-like tools)"
    ),
    sys!(SYS_setfsgid, Allow, "filesystem gid"),
    sys!(SYS_setgroups, Allow, "drop supplementary groups"),
    sys!(SYS_capget, Allow, "read own capabilities"),
    sys!(
        SYS_capset,
        Allow,
        "drop capabilities; cannot raise past the bounding set"
    ),
    sys!(SYS_getpgid, Allow, "process group (shells, job control)"),
    sys!(SYS_setpgid, Allow, "process group (shells, job control)"),
    sys!(SYS_getsid, Allow, "session id"),
    sys!(SYS_setsid, Allow, "start a session (daemons, terminals)"),
    sys!(
        SYS_kill,
        Allow,
        "signal processes; the pid namespace bounds the reach"
    ),
    sys!(SYS_tkill, Allow, "signal a thread"),
    sys!(SYS_tgkill, Allow, "signal a thread (raise, abort)"),
    sys!(SYS_rt_sigqueueinfo, Allow, "queue a signal with data"),
    sys!(SYS_rt_tgsigqueueinfo, Allow, "queue a signal to a thread"),
    sys!(SYS_rt_sigpending, Allow, "pending signals"),
    sys!(SYS_rt_sigtimedwait, Allow, "wait for a signal"),
    sys!(SYS_rt_sigsuspend, Allow, "wait for a signal"),
    sys!(
        SYS_sigaltstack,
        Allow,
        "alternate signal stack (stack overflow handlers)"
    ),
    sys!(
        SYS_restart_syscall,
        Allow,
        "kernel-internal restart after a signal"
    ),
    sys!(
        SYS_pidfd_open,
        Allow,
        "process handle for waiting (python, systemd-style supervisors)"
    ),
    sys!(
        SYS_pidfd_send_signal,
        Allow,
        "signal through a process handle"
    ),
    sys!(SYS_getitimer, Allow, "interval timers"),
    sys!(SYS_setitimer, Allow, "interval timers"),
    sys!(SYS_timer_create, Allow, "POSIX timers"),
    sys!(SYS_timer_settime, Allow, "POSIX timers"),
    sys!(SYS_timer_gettime, Allow, "POSIX timers"),
    sys!(SYS_timer_getoverrun, Allow, "POSIX timers"),
    sys!(SYS_timer_delete, Allow, "POSIX timers"),
    sys!(SYS_times, Allow, "process CPU times"),
    sys!(SYS_getrusage, Allow, "resource usage"),
    sys!(
        SYS_prlimit64,
        Allow,
        "read or lower limits (glibc's getrlimit uses it)"
    ),
    sys!(SYS_getpriority, Allow, "scheduling priority"),
    sys!(
        SYS_setpriority,
        Allow,
        "nice; raising priority needs privilege"
    ),
    sys!(SYS_sched_yield, Allow, "yield the CPU"),
    sys!(
        SYS_sched_getaffinity,
        Allow,
        "CPU count (nproc, os.cpu_count, node)"
    ),
    sys!(
        SYS_sched_setaffinity,
        Allow,
        "pin threads; bounded by the cgroup cpuset"
    ),
    sys!(SYS_sched_getparam, Allow, "scheduler parameters"),
    sys!(SYS_sched_setparam, Allow, "scheduler parameters"),
    sys!(SYS_sched_getscheduler, Allow, "scheduler policy"),
    sys!(
        SYS_sched_setscheduler,
        Allow,
        "scheduler policy; real-time needs privilege"
    ),
    sys!(SYS_sched_get_priority_max, Allow, "scheduler limits"),
    sys!(SYS_sched_get_priority_min, Allow, "scheduler limits"),
    sys!(SYS_sched_rr_get_interval, Allow, "scheduler time slice"),
    sys!(SYS_sched_getattr, Allow, "scheduler attributes"),
    sys!(SYS_sched_setattr, Allow, "scheduler attributes"),
    sys!(SYS_ioprio_get, Allow, "I/O priority"),
    sys!(SYS_ioprio_set, Allow, "I/O priority (ionice)"),
    sys!(SYS_getcpu, Allow, "current CPU"),
    sys!(SYS_uname, Allow, "kernel name and version"),
    sys!(SYS_sysinfo, Allow, "memory and uptime (free, python)"),
    sys!(SYS_umask, Allow, "file creation mask"),
    sys!(
        SYS_seccomp,
        Allow,
        "a box may add filters; they can only restrict further"
    ),
    sys!(
        SYS_landlock_create_ruleset,
        Allow,
        "Landlock can only restrict further"
    ),
    sys!(
        SYS_landlock_add_rule,
        Allow,
        "Landlock can only restrict further"
    ),
    sys!(
        SYS_landlock_restrict_self,
        Allow,
        "Landlock can only restrict further"
    ),
    // --- filesystem ---
    sys!(
        SYS_openat2,
        Unsupported,
        "open with resolve flags: its mode sits in a struct the filter cannot read, so ENOSYS makes callers fall back to openat"
    ),
    sys!(
        SYS_close_range,
        Allow,
        "close many descriptors (python subprocess, systemd)"
    ),
    sys!(SYS_dup, Allow, "duplicate a descriptor"),
    sys!(SYS_dup3, Allow, "duplicate a descriptor"),
    sys!(SYS_pipe2, Allow, "create a pipe"),
    sys!(SYS_flock, Allow, "advisory file locks (git, pip)"),
    sys!(SYS_fsync, Allow, "flush a file"),
    sys!(SYS_fdatasync, Allow, "flush file data"),
    sys!(SYS_sync, Allow, "flush all filesystems"),
    sys!(SYS_syncfs, Allow, "flush one filesystem"),
    sys!(SYS_ftruncate, Allow, "resize a file"),
    sys!(SYS_truncate, Allow, "resize a file by path"),
    sys!(SYS_fallocate, Allow, "preallocate file space"),
    sys!(SYS_fadvise64, Allow, "file access hints"),
    sys!(SYS_readahead, Allow, "prefetch a file"),
    sys!(SYS_preadv, Allow, "positional vectored read"),
    sys!(SYS_pwritev, Allow, "positional vectored write"),
    sys!(SYS_preadv2, Allow, "positional vectored read with flags"),
    sys!(SYS_pwritev2, Allow, "positional vectored write with flags"),
    sys!(SYS_sendfile, Allow, "copy between descriptors"),
    sys!(
        SYS_copy_file_range,
        Allow,
        "in-kernel file copy (cp, python shutil)"
    ),
    sys!(SYS_splice, Allow, "move data through a pipe"),
    sys!(SYS_tee, Allow, "duplicate pipe data"),
    sys!(SYS_vmsplice, Allow, "map user pages into a pipe"),
    sys!(SYS_statfs, Allow, "filesystem statistics (df)"),
    sys!(SYS_fstatfs, Allow, "filesystem statistics"),
    sys!(SYS_getcwd, Allow, "working directory"),
    sys!(SYS_chdir, Allow, "change directory"),
    sys!(SYS_fchdir, Allow, "change directory by descriptor"),
    sys!(SYS_mkdirat, Allow, "create a directory"),
    sys!(SYS_renameat2, Allow, "rename"),
    sys!(SYS_unlinkat, Allow, "remove a file or directory"),
    sys!(SYS_linkat, Allow, "hard link"),
    sys!(SYS_symlinkat, Allow, "symbolic link"),
    sys!(
        SYS_mknodat,
        Check(NoSetIdMode(2)),
        "create FIFOs; device nodes need CAP_MKNOD; no set-ID mode"
    ),
    sys!(
        SYS_fchmod,
        Check(NoSetIdMode(1)),
        "change mode; set-ID bits refused (the file may land on the host)"
    ),
    sys!(
        SYS_fchmodat,
        Check(NoSetIdMode(2)),
        "change mode by path; set-ID bits refused"
    ),
    sys!(
        SYS_fchmodat2,
        Check(NoSetIdMode(2)),
        "change mode by path with flags; set-ID bits refused"
    ),
    sys!(
        SYS_fchown,
        Allow,
        "change owner; bounded by the user namespace"
    ),
    sys!(SYS_fchownat, Allow, "change owner by path"),
    sys!(SYS_utimensat, Allow, "set timestamps (touch, make, tar)"),
    sys!(SYS_getxattr, Allow, "extended attributes"),
    sys!(SYS_lgetxattr, Allow, "extended attributes"),
    sys!(SYS_fgetxattr, Allow, "extended attributes"),
    sys!(SYS_getxattrat, Allow, "extended attributes"),
    sys!(SYS_setxattr, Allow, "extended attributes"),
    sys!(SYS_lsetxattr, Allow, "extended attributes"),
    sys!(SYS_fsetxattr, Allow, "extended attributes"),
    sys!(SYS_setxattrat, Allow, "extended attributes"),
    sys!(SYS_listxattr, Allow, "extended attributes"),
    sys!(SYS_llistxattr, Allow, "extended attributes"),
    sys!(SYS_flistxattr, Allow, "extended attributes"),
    sys!(SYS_listxattrat, Allow, "extended attributes"),
    sys!(SYS_removexattr, Allow, "extended attributes"),
    sys!(SYS_lremovexattr, Allow, "extended attributes"),
    sys!(SYS_fremovexattr, Allow, "extended attributes"),
    sys!(SYS_removexattrat, Allow, "extended attributes"),
    sys!(
        SYS_inotify_init1,
        Allow,
        "watch files (editors, dev servers)"
    ),
    sys!(SYS_inotify_add_watch, Allow, "watch files"),
    sys!(SYS_inotify_rm_watch, Allow, "watch files"),
    sys!(
        SYS_memfd_create,
        Allow,
        "anonymous files (JITs, python multiprocessing)"
    ),
    sys!(
        SYS_cachestat,
        Allow,
        "page cache statistics for one's own files"
    ),
    // --- memory ---
    sys!(SYS_msync, Allow, "flush a file mapping"),
    sys!(SYS_mincore, Allow, "page residency"),
    sys!(SYS_mlock, Allow, "lock pages; bounded by RLIMIT_MEMLOCK"),
    sys!(SYS_mlock2, Allow, "lock pages"),
    sys!(SYS_munlock, Allow, "unlock pages"),
    sys!(
        SYS_mlockall,
        Allow,
        "lock all pages; bounded by RLIMIT_MEMLOCK"
    ),
    sys!(SYS_munlockall, Allow, "unlock all pages"),
    sys!(SYS_pkey_mprotect, Allow, "memory protection keys"),
    sys!(SYS_pkey_alloc, Allow, "memory protection keys"),
    sys!(SYS_pkey_free, Allow, "memory protection keys"),
    sys!(SYS_mseal, Allow, "seal own mappings; only restricts"),
    sys!(
        SYS_map_shadow_stack,
        Allow,
        "CET shadow stacks for new threads (glibc)"
    ),
    sys!(SYS_get_mempolicy, Allow, "NUMA policy of own memory"),
    sys!(SYS_set_mempolicy, Allow, "NUMA policy of own memory"),
    sys!(SYS_mbind, Allow, "NUMA policy of own memory"),
    // --- events, timers, IPC ---
    sys!(
        SYS_futex_waitv,
        Allow,
        "wait on several futexes (wine, games, newer runtimes)"
    ),
    sys!(SYS_futex_wake, Allow, "futex2 wake"),
    sys!(SYS_futex_wait, Allow, "futex2 wait"),
    sys!(SYS_futex_requeue, Allow, "futex2 requeue"),
    sys!(
        SYS_get_robust_list,
        Allow,
        "read a robust futex list; needs ptrace access to others"
    ),
    sys!(SYS_eventfd2, Allow, "event counters (node, python asyncio)"),
    sys!(SYS_timerfd_create, Allow, "timers as descriptors"),
    sys!(SYS_timerfd_settime, Allow, "timers as descriptors"),
    sys!(SYS_timerfd_gettime, Allow, "timers as descriptors"),
    sys!(SYS_signalfd4, Allow, "signals as descriptors"),
    sys!(
        SYS_io_setup,
        Allow,
        "Linux AIO (databases); contained, unlike io_uring"
    ),
    sys!(SYS_io_destroy, Allow, "Linux AIO"),
    sys!(SYS_io_submit, Allow, "Linux AIO"),
    sys!(SYS_io_cancel, Allow, "Linux AIO"),
    sys!(SYS_io_getevents, Allow, "Linux AIO"),
    sys!(
        SYS_shmget,
        Allow,
        "System V shared memory; the IPC namespace bounds it"
    ),
    sys!(SYS_shmat, Allow, "System V shared memory"),
    sys!(SYS_shmdt, Allow, "System V shared memory"),
    sys!(SYS_shmctl, Allow, "System V shared memory"),
    sys!(SYS_semget, Allow, "System V semaphores"),
    sys!(SYS_semop, Allow, "System V semaphores"),
    sys!(SYS_semtimedop, Allow, "System V semaphores"),
    sys!(SYS_semctl, Allow, "System V semaphores"),
    sys!(SYS_msgget, Allow, "System V message queues"),
    sys!(SYS_msgsnd, Allow, "System V message queues"),
    sys!(SYS_msgrcv, Allow, "System V message queues"),
    sys!(SYS_msgctl, Allow, "System V message queues"),
    sys!(
        SYS_mq_open,
        Allow,
        "POSIX message queues; the IPC namespace bounds them"
    ),
    sys!(SYS_mq_unlink, Allow, "POSIX message queues"),
    sys!(SYS_mq_timedsend, Allow, "POSIX message queues"),
    sys!(SYS_mq_timedreceive, Allow, "POSIX message queues"),
    sys!(SYS_mq_notify, Allow, "POSIX message queues"),
    sys!(SYS_mq_getsetattr, Allow, "POSIX message queues"),
    // --- sockets (families are checked on socket/socketpair; the rest act on existing ones) ---
    sys!(
        SYS_socket,
        Check(SocketFamily),
        "create sockets of the families the profile allows"
    ),
    sys!(
        SYS_socketpair,
        Check(SocketpairFamily),
        "connected AF_UNIX pairs only"
    ),
    sys!(SYS_bind, Allow, "bind a socket"),
    sys!(SYS_listen, Allow, "listen on a socket"),
    sys!(SYS_accept, Allow, "accept a connection"),
    sys!(SYS_accept4, Allow, "accept a connection"),
    sys!(
        SYS_connect,
        Allow,
        "connect; egress is enforced by the network layer"
    ),
    sys!(SYS_getsockname, Allow, "socket address"),
    sys!(SYS_getpeername, Allow, "peer address"),
    sys!(SYS_sendto, Allow, "send"),
    sys!(SYS_recvfrom, Allow, "receive"),
    sys!(SYS_sendmsg, Allow, "send with ancillary data (fd passing)"),
    sys!(SYS_recvmsg, Allow, "receive with ancillary data"),
    sys!(SYS_sendmmsg, Allow, "send many (DNS resolvers)"),
    sys!(SYS_recvmmsg, Allow, "receive many"),
    sys!(SYS_shutdown, Allow, "half-close a socket"),
    sys!(SYS_getsockopt, Allow, "socket options"),
    sys!(SYS_setsockopt, Allow, "socket options"),
];
