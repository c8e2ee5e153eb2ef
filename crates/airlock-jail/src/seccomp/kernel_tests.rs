//! Kernel tests: fork, install the filter, perform the attack for real, and report the result
//! through the child's exit status. Everything a child needs is built before `fork`.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::ffi::CString;

use super::super::compile::CLONE_NAMESPACE_FLAGS;
use super::super::{SeccompProgram, SocketPolicy};
use super::build;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The child exited with this code: 0 for success, an errno for a refused call.
    Exited(i32),
    /// The child was killed by this signal.
    Signaled(i32),
}

/// Exit code when the child could not install the filter.
const INSTALL_FAILED: i32 = 200;
/// Exit code when an attack that should have been refused went through.
const ATTACK_SUCCEEDED: i32 = 201;
/// Exit code when the child's own setup (not the attack) failed.
const SETUP_FAILED: i32 = 202;

/// Forks; the child installs `program` and exits with `attack()`'s result. `attack` runs in a
/// forked child of a multithreaded process: it must not allocate or take locks.
pub(super) fn in_filtered_child(program: &SeccompProgram, attack: impl FnOnce() -> i32) -> Outcome {
    // SAFETY: the child only calls `install` (allocation-free), `attack` (async-signal-safe by
    // contract) and `_exit`; it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = match program.install() {
            Ok(()) => attack(),
            Err(_) => INSTALL_FAILED,
        };
        // SAFETY: `_exit` ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(code) };
    }
    wait_for(pid)
}

fn wait_for(pid: libc::pid_t) -> Outcome {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our own child.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(
            err.raw_os_error(),
            Some(libc::EINTR),
            "waitpid failed: {err}"
        );
    }
    if libc::WIFEXITED(status) {
        Outcome::Exited(libc::WEXITSTATUS(status))
    } else {
        assert!(
            libc::WIFSIGNALED(status),
            "unexpected wait status {status:#x}"
        );
        Outcome::Signaled(libc::WTERMSIG(status))
    }
}

pub(super) fn errno() -> i32 {
    // SAFETY: `__errno_location` returns this thread's errno slot, always valid to read.
    unsafe { *libc::__errno_location() }
}

/// 0 if a syscall returned success, its errno otherwise.
fn code_of(ret: libc::c_long) -> i32 {
    if ret < 0 {
        errno()
    } else {
        0
    }
}

/// Runs `attack` under the default (UnixOnly) filter and asserts it failed with `errno`.
fn assert_refused(errno: i32, attack: impl FnOnce() -> i32) {
    let program = build(SocketPolicy::UnixOnly);
    assert_eq!(in_filtered_child(&program, attack), Outcome::Exited(errno));
}

/// Makes a raw syscall in the child; for a forking call, the new process exits at once.
fn raw_syscall(nr: libc::c_long, a: [libc::c_long; 5]) -> i32 {
    // SAFETY: every call site passes arguments that make the kernel touch no memory of ours
    // (null pointers, zero lengths) or valid pointers to locals.
    let ret = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4]) };
    code_of(ret)
}

#[test]
fn ptrace_traceme_is_refused() {
    assert_refused(libc::EPERM, || {
        // SAFETY: PTRACE_TRACEME takes no pointers.
        let ret = unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) };
        code_of(ret)
    });
}

#[test]
fn unshare_user_namespace_is_refused() {
    assert_refused(libc::EPERM, || {
        // SAFETY: unshare takes only flags.
        code_of(unsafe { libc::unshare(libc::CLONE_NEWUSER) }.into())
    });
}

/// `setns(fd, nstype)` on this process's own namespace descriptor `ns` (opened before fork).
fn setns_own(ns: &std::fs::File, nstype: libc::c_long) -> i32 {
    use std::os::fd::AsRawFd;
    raw_syscall(
        libc::SYS_setns,
        [ns.as_raw_fd() as libc::c_long, nstype, 0, 0, 0],
    )
}

#[test]
fn setns_into_any_kind_of_namespace_but_a_user_namespace_is_refused() {
    // Root (the test) may join its own network and mount namespaces: only the filter refuses.
    let net = std::fs::File::open("/proc/self/ns/net").unwrap();
    let mnt = std::fs::File::open("/proc/self/ns/mnt").unwrap();
    assert_refused(libc::EPERM, || {
        setns_own(&net, libc::CLONE_NEWNET as libc::c_long)
    });
    assert_refused(libc::EPERM, || {
        setns_own(&mnt, libc::CLONE_NEWNS as libc::c_long)
    });
    // nstype 0 means "whatever kind the descriptor is": refused too.
    assert_refused(libc::EPERM, || setns_own(&net, 0));
    // A user-namespace flag on a network namespace's descriptor passes the filter and the
    // kernel refuses the mismatch itself.
    assert_refused(libc::EINVAL, || {
        setns_own(&net, libc::CLONE_NEWUSER as libc::c_long)
    });
}

#[test]
fn setns_into_a_user_namespace_passes_the_filter() {
    // Joining one's own user namespace is EINVAL from the kernel ("no capabilities by
    // re-entering"): the call reached it, where the filter would have said EPERM.
    let user = std::fs::File::open("/proc/self/ns/user").unwrap();
    assert_refused(libc::EINVAL, || {
        setns_own(&user, libc::CLONE_NEWUSER as libc::c_long)
    });
}

/// Raw `clone(flags | SIGCHLD)`; a child that gets through exits immediately.
fn clone_with(flags: u64) -> i32 {
    // SAFETY: fork-like clone (no CLONE_VM, null stack): the new process gets a copy of our
    // memory and leaves at once through `_exit`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags | libc::SIGCHLD as u64,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if ret == 0 {
        // SAFETY: we are the new process; leave without touching shared state.
        unsafe { libc::_exit(0) };
    }
    if ret > 0 {
        let mut status = 0;
        // SAFETY: reaping our own child with a valid out-pointer.
        unsafe { libc::waitpid(ret as libc::pid_t, &mut status, 0) };
        return ATTACK_SUCCEEDED;
    }
    errno()
}

#[test]
fn clone_with_new_user_namespace_is_refused() {
    assert_refused(libc::EPERM, || clone_with(libc::CLONE_NEWUSER as u64));
}

#[test]
fn clone_with_any_namespace_flag_is_refused_even_with_high_word_junk() {
    assert_refused(libc::EPERM, || {
        for bit in 0..32 {
            let flag = 1u64 << bit;
            if flag & u64::from(CLONE_NAMESPACE_FLAGS) == 0 {
                continue;
            }
            for flags in [flag, flag | 0x1_0000_0000] {
                let code = clone_with(flags);
                if code != libc::EPERM {
                    return code;
                }
            }
        }
        libc::EPERM
    });
}

#[test]
fn plain_fork_still_works() {
    assert_refused(0, || {
        // SAFETY: the grandchild only calls `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: leave the grandchild immediately.
            unsafe { libc::_exit(7) };
        }
        if pid < 0 {
            return errno();
        }
        let mut status = 0;
        // SAFETY: reaping our own child with a valid out-pointer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7 {
            0
        } else {
            SETUP_FAILED
        }
    });
}

#[test]
fn mount_is_refused() {
    // A target that does not exist: without the filter the kernel would say ENOENT, so EPERM
    // can only come from seccomp, and nothing is mounted on the host if the filter were missing.
    let target = CString::new(format!("/nonexistent-airlock-{}", std::process::id())).unwrap();
    assert_refused(libc::EPERM, || {
        // SAFETY: all pointers are valid NUL-terminated strings or null.
        let ret = unsafe {
            libc::mount(
                c"none".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        code_of(ret.into())
    });
}

#[test]
fn bpf_is_refused() {
    assert_refused(libc::EPERM, || raw_syscall(libc::SYS_bpf, [0, 0, 0, 0, 0]));
}

#[test]
fn keyctl_is_refused() {
    // KEYCTL_GET_KEYRING_ID(KEY_SPEC_SESSION_KEYRING, create=0)
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_keyctl, [0, -3, 0, 0, 0])
    });
}

#[test]
fn perf_event_open_is_refused() {
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_perf_event_open, [0, 0, -1, -1, 0])
    });
}

#[test]
fn io_uring_setup_is_refused() {
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_io_uring_setup, [1, 0, 0, 0, 0])
    });
}

#[test]
fn userfaultfd_is_refused() {
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_userfaultfd, [0, 0, 0, 0, 0])
    });
}

#[test]
fn clone3_reports_enosys_so_libc_falls_back() {
    // Null args with size 0: had the call reached the kernel it would fail with EINVAL.
    assert_refused(libc::ENOSYS, || {
        raw_syscall(libc::SYS_clone3, [0, 0, 0, 0, 0])
    });
}

#[cfg(target_arch = "x86_64")]
#[test]
fn x32_syscalls_are_refused() {
    assert_refused(libc::ENOSYS, || {
        raw_syscall(0x4000_0000 | libc::SYS_getpid, [0; 5])
    });
}

#[cfg(target_arch = "x86_64")]
#[test]
fn i386_abi_syscalls_kill_the_process() {
    let program = build(SocketPolicy::UnixOnly);
    let outcome = in_filtered_child(&program, || {
        // SAFETY: `int 0x80` with eax=20 is the i386 getpid; it reads no memory. The filter kills
        // the process before the kernel runs it.
        unsafe { std::arch::asm!("int 0x80", inout("eax") 20u32 => _, options(nostack)) };
        ATTACK_SUCCEEDED
    });
    assert_eq!(outcome, Outcome::Signaled(libc::SIGSYS));
}

fn socket_code(domain: i32, ty: i32, protocol: i32) -> i32 {
    // SAFETY: socket takes integers only.
    code_of(unsafe { libc::socket(domain, ty, protocol) }.into())
}

#[test]
fn socket_families_under_unix_only() {
    let program = build(SocketPolicy::UnixOnly);
    let run = |d, t, p| in_filtered_child(&program, || socket_code(d, t, p));
    let refused = Outcome::Exited(libc::EAFNOSUPPORT);
    assert_eq!(run(libc::AF_PACKET, libc::SOCK_RAW, 0), refused);
    assert_eq!(run(libc::AF_VSOCK, libc::SOCK_STREAM, 0), refused);
    assert_eq!(run(libc::AF_INET, libc::SOCK_STREAM, 0), refused);
    assert_eq!(run(libc::AF_INET6, libc::SOCK_DGRAM, 0), refused);
    assert_eq!(run(libc::AF_UNIX, libc::SOCK_STREAM, 0), Outcome::Exited(0));
    assert_eq!(
        run(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE),
        Outcome::Exited(0)
    );
    let audit = run(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT);
    assert_eq!(audit, Outcome::Exited(libc::EPROTONOSUPPORT));
    let pair = |domain| {
        in_filtered_child(&program, || {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors.
            code_of(
                unsafe { libc::socketpair(domain, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) }.into(),
            )
        })
    };
    assert_eq!(pair(libc::AF_UNIX), Outcome::Exited(0));
    assert_eq!(pair(libc::AF_INET), Outcome::Exited(libc::EAFNOSUPPORT));
}

#[test]
fn socket_families_under_unix_and_inet() {
    let program = build(SocketPolicy::UnixAndInet);
    let run = |d, t, p| in_filtered_child(&program, || socket_code(d, t, p));
    assert_eq!(
        run(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0),
        Outcome::Exited(0)
    );
    assert_eq!(run(libc::AF_INET, libc::SOCK_DGRAM, 0), Outcome::Exited(0));
    assert_eq!(run(libc::AF_UNIX, libc::SOCK_DGRAM, 0), Outcome::Exited(0));
    assert_eq!(
        run(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE),
        Outcome::Exited(0)
    );
    // Raw IP sockets would work for root without the filter; the filter refuses them.
    assert_eq!(
        run(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP),
        Outcome::Exited(libc::EPERM)
    );
    assert_eq!(
        run(libc::AF_PACKET, libc::SOCK_RAW, 0),
        Outcome::Exited(libc::EAFNOSUPPORT)
    );
    assert_eq!(
        run(libc::AF_VSOCK, libc::SOCK_STREAM, 0),
        Outcome::Exited(libc::EAFNOSUPPORT)
    );
    let audit = run(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT);
    assert_eq!(audit, Outcome::Exited(libc::EPROTONOSUPPORT));
}

/// Opens a pty master in the child (allowed syscalls only); -1 on failure.
fn open_pty() -> libc::c_int {
    // SAFETY: posix_openpt/unlockpt take integers and open /dev/ptmx; no allocation.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if fd >= 0 && libc::unlockpt(fd) == 0 {
            fd
        } else {
            -1
        }
    }
}

/// `ioctl(pty, request, arg)` through the raw syscall so the full 64-bit request is passed.
fn tty_ioctl(request: u64, arg: *mut libc::c_void) -> i32 {
    let fd = open_pty();
    if fd < 0 {
        return SETUP_FAILED;
    }
    // SAFETY: `fd` is our pty; `arg` points to a live local of the size the request expects.
    code_of(unsafe { libc::syscall(libc::SYS_ioctl, fd, request, arg) })
}

#[test]
fn tiocsti_on_a_real_tty_is_refused_with_eperm_not_enotty() {
    assert_refused(libc::EPERM, || {
        let mut byte: u8 = b'x';
        tty_ioctl(libc::TIOCSTI, (&mut byte as *mut u8).cast())
    });
    assert_refused(libc::EPERM, || {
        let mut byte: u8 = b'x';
        tty_ioctl(0x1_0000_0000 | libc::TIOCSTI, (&mut byte as *mut u8).cast())
    });
    assert_refused(libc::EPERM, || {
        let mut subcode: u8 = 0;
        tty_ioctl(libc::TIOCLINUX, (&mut subcode as *mut u8).cast())
    });
}

#[test]
fn ordinary_tty_ioctls_still_work() {
    assert_refused(0, || {
        // SAFETY: winsize is plain data; all-zero is a valid value.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        tty_ioctl(libc::TIOCGWINSZ, (&mut size as *mut libc::winsize).cast())
    });
}

/// A fresh regular file for a mode test, and the directory holding it (removed by the caller).
fn scratch_file(tag: &str) -> (std::path::PathBuf, CString, CString) {
    let dir = std::env::temp_dir().join(format!("airlock-seccomp-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("f");
    std::fs::write(&file, b"#!/bin/sh\n").unwrap();
    let new = dir.join("new");
    let c = |p: &std::path::Path| CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    (dir.clone(), c(&file), c(&new))
}

#[test]
fn set_id_bits_cannot_be_set_by_chmod_or_at_creation() {
    let (dir, file, new) = scratch_file("setid");
    let (f, n) = (file.as_ptr() as libc::c_long, new.as_ptr() as libc::c_long);
    let at_fdcwd = libc::AT_FDCWD as libc::c_long;
    // chmod family: refused with the bits, allowed without.
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_fchmodat, [at_fdcwd, f, 0o4755, 0, 0])
    });
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_fchmodat, [at_fdcwd, f, 0o2755, 0, 0])
    });
    assert_refused(0, || {
        raw_syscall(libc::SYS_fchmodat, [at_fdcwd, f, 0o755, 0, 0])
    });
    assert_refused(libc::EPERM, || {
        // SAFETY: opening a path we own; the descriptor is closed by the child's exit.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_RDONLY) };
        if fd < 0 {
            return SETUP_FAILED;
        }
        raw_syscall(libc::SYS_fchmod, [fd as libc::c_long, 0o6755, 0, 0, 0])
    });
    // Creating with a set-ID mode: refused, and nothing is created.
    let o_creat = (libc::O_CREAT | libc::O_WRONLY) as libc::c_long;
    assert_refused(libc::EPERM, || {
        raw_syscall(libc::SYS_openat, [at_fdcwd, n, o_creat, 0o4755, 0])
    });
    assert_refused(libc::EPERM, || {
        raw_syscall(
            libc::SYS_mknodat,
            [at_fdcwd, n, (libc::S_IFREG | 0o4755) as libc::c_long, 0, 0],
        )
    });
    assert!(!dir.join("new").exists(), "a set-ID file was created");
    // openat2 answers ENOSYS (libc and runtimes fall back to openat).
    assert_refused(libc::ENOSYS, || {
        raw_syscall(libc::SYS_openat2, [at_fdcwd, n, 0, 0, 0])
    });
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.join("f")).unwrap().permissions(),
    );
    assert_eq!(
        mode & 0o7777,
        0o755,
        "the file's mode after the refused calls"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
