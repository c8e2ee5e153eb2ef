//! Starting a process: everything the child needs is prepared (allocated) before the child is
//! made; the child then only makes syscalls and calls the runtime's `pre_exec` hook before
//! `execve`. The agent is single-threaded, so the child inherits no lock held by another thread.
//!
//! The child is made as `posix_spawn` makes it: `clone(CLONE_VM | CLONE_VFORK)` on a stack of
//! its own, sharing the agent's memory until its `execve` (the agent waits meanwhile), so no
//! page table is copied and no page of the agent's is made copy-on-write. Under gVisor, whose
//! Sentry copies a whole address space on `fork`, that is most of a command's start.

use crate::sys;
use crate::AgentHooks;
use airlock_protocol::{ExecRequest, ExecUser};
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// PATH used when the request's environment has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The child's stack until its `execve` (it runs a few syscalls and the hooks').
const CHILD_STACK: usize = 256 << 10;

/// The agent's ends of a started process's stdio (all non-blocking, close-on-exec).
pub(crate) struct Spawned {
    pub(crate) pid: i32,
    /// stdout pipe, or the pty master.
    pub(crate) stdout: OwnedFd,
    /// stderr pipe; `None` with a pty.
    pub(crate) stderr: Option<OwnedFd>,
    /// stdin pipe (or a duplicate of the pty master), when requested.
    pub(crate) stdin: Option<OwnedFd>,
    /// The pty master, for resize.
    pub(crate) pty: Option<OwnedFd>,
}

fn cstring(s: impl AsRef<[u8]>) -> io::Result<CString> {
    CString::new(s.as_ref()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Finds the program like execvp, over the request's PATH.
pub(crate) fn resolve(
    program: &str,
    path_var: Option<&str>,
    cwd: Option<&str>,
) -> io::Result<CString> {
    if program.contains('/') {
        return cstring(program);
    }
    for dir in path_var.unwrap_or(DEFAULT_PATH).split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let mut candidate = Path::new(dir).join(program);
        if candidate.is_relative() {
            if let Some(cwd) = cwd {
                candidate = Path::new(cwd).join(candidate);
            }
        }
        if let Ok(meta) = std::fs::metadata(&candidate) {
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                return cstring(candidate.as_os_str().as_bytes());
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("{program}: not found in PATH"),
    ))
}

struct ChildPlan {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: Option<CString>,
    tty_path: Option<CString>,
    dev_null: CString,
    as_root: bool,
}

/// The fds the child's stdio comes from.
struct ChildFds {
    stdin: Option<RawFd>,
    stdout: RawFd,
    stderr: RawFd,
    exec_error: RawFd,
}

/// Everything the child reads, handed to [`child_entry`] through `clone`.
struct ChildArgs<'a> {
    plan: &'a ChildPlan,
    fds: &'a ChildFds,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    hooks: &'a dyn AgentHooks,
}

extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` that `start_child` keeps alive: with CLONE_VFORK the
    // agent is suspended until this child has called execve or _exit, and child_main does
    // neither return nor outlive that.
    let a = unsafe { &*(arg as *const ChildArgs<'_>) };
    child_main(a.plan, a.fds, a.argv, a.envp, a.hooks)
}

/// Makes the child (see the module's note) and returns its pid once it has exec'd or failed.
fn start_child(args: &ChildArgs<'_>) -> io::Result<i32> {
    let mut stack = vec![0u8; CHILD_STACK];
    // The stack grows down from its end, 16-byte aligned as the ABI wants.
    let top = (stack.as_mut_ptr() as usize + CHILD_STACK) & !15;
    // SAFETY: the sets are plain data filled by sigfillset; pthread_sigmask only changes this
    // thread's mask. Every signal stays blocked while the child shares our memory, so no
    // handler of the agent's can run in it before it resets them.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    // SAFETY: `top` is the aligned end of `stack`, which outlives the child's use of it (the
    // parent resumes only after the child's execve or _exit); `args` lives as long. Without
    // CLONE_FILES, CLONE_FS or CLONE_SIGHAND the child's descriptors, directory and signal
    // dispositions are its own copies.
    let pid = unsafe {
        libc::clone(
            child_entry,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            args as *const ChildArgs<'_> as *mut libc::c_void,
        )
    };
    let made = if pid == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    };
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    made
}

/// Starts `req` in a new session, its stdio on pipes or a new pty.
pub(crate) fn spawn(req: &ExecRequest, hooks: &dyn AgentHooks) -> io::Result<Spawned> {
    let as_root = req.user == ExecUser::Root;
    if as_root && !hooks.has_root() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this box has no root user: run it as the box user (its receipt's `root` line says what this box gives)",
        ));
    }
    let program = resolve(
        req.argv.first().map(String::as_str).unwrap_or_default(),
        req.env.get("PATH").map(String::as_str),
        req.cwd.as_deref(),
    )?;
    let argv = req
        .argv
        .iter()
        .map(cstring)
        .collect::<io::Result<Vec<_>>>()?;
    let envp = req
        .env
        .iter()
        .map(|(k, v)| cstring(format!("{k}={v}")))
        .collect::<io::Result<Vec<_>>>()?;
    let cwd = req
        .cwd
        .as_deref()
        .map(|c| cstring(OsStr::new(c).as_bytes()))
        .transpose()?;
    let (err_r, err_w) = sys::pipe()?;

    let (pty, tty_path) = match req.tty {
        Some(size) => {
            let (master, path) = crate::pty::open(size)?;
            (Some(master), Some(path))
        }
        None => (None, None),
    };
    let plan = ChildPlan {
        program,
        argv,
        envp,
        cwd,
        tty_path,
        dev_null: cstring("/dev/null")?,
        as_root,
    };

    let (stdout_r, stdout_w, stderr_pair, stdin_pair) = if let Some(master) = &pty {
        let out = master.try_clone()?;
        let stdin = if req.stdin {
            Some(master.try_clone()?)
        } else {
            None
        };
        (out, None, None, stdin.map(|s| (None, s)))
    } else {
        let (out_r, out_w) = sys::pipe()?;
        let (err_pipe_r, err_pipe_w) = sys::pipe()?;
        let stdin = if req.stdin {
            let (r, w) = sys::pipe()?;
            Some((Some(r), w))
        } else {
            None
        };
        (out_r, Some(out_w), Some((err_pipe_r, err_pipe_w)), stdin)
    };
    let fds = ChildFds {
        stdin: stdin_pair
            .as_ref()
            .and_then(|(r, _)| r.as_ref().map(AsRawFd::as_raw_fd)),
        stdout: stdout_w.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        stderr: stderr_pair.as_ref().map_or(-1, |(_, w)| w.as_raw_fd()),
        exec_error: err_w.as_raw_fd(),
    };

    let mut argv_ptrs: Vec<*const libc::c_char> = plan.argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = plan.envp.iter().map(|e| e.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());

    let pid = start_child(&ChildArgs {
        plan: &plan,
        fds: &fds,
        argv: &argv_ptrs,
        envp: &envp_ptrs,
        hooks,
    })?;
    drop(err_w);
    drop(stdout_w);
    let stderr = stderr_pair.map(|(r, _w)| r);
    let stdin = stdin_pair.map(|(_r, w)| w);

    let mut errno = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match sys::read(&err_r, errno.get_mut(got..).unwrap_or_default()) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    if got == 4 {
        let mut status = 0;
        // SAFETY: pid is our child, which is exiting; status is a valid out pointer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)));
    }
    for fd in [Some(&stdout_r), stderr.as_ref(), stdin.as_ref()]
        .into_iter()
        .flatten()
    {
        sys::set_nonblocking(fd.as_raw_fd())?;
    }
    Ok(Spawned {
        pid,
        stdout: stdout_r,
        stderr,
        stdin,
        pty,
    })
}

// ---- child side: runs between clone and execve, in the agent's memory; syscalls only, no
// allocation, nothing written but its own stack. ----

fn child_fail(fd: RawFd, errno: i32) -> ! {
    let bytes = errno.to_ne_bytes();
    // SAFETY: bytes is a valid 4-byte buffer; _exit never returns.
    unsafe {
        libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127)
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn child_main(
    plan: &ChildPlan,
    fds: &ChildFds,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    hooks: &dyn AgentHooks,
) -> ! {
    let fail = |errno: i32| child_fail(fds.exec_error, errno);
    // SAFETY: the signal set is plain data initialised by sigemptyset. Every signal arrives
    // blocked (see start_child): the dispositions go back to the defaults first (the child's
    // own table: no CLONE_SIGHAND), then the mask is emptied — the agent blocks SIGCHLD and Rust
    // ignores SIGPIPE, neither of which the command should inherit.
    unsafe {
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
    // SAFETY: setsid has no memory effects; the child is not a group leader.
    if unsafe { libc::setsid() } < 0 {
        fail(last_errno());
    }
    if let Some(tty) = &plan.tty_path {
        // SAFETY: tty is a NUL-terminated path; TIOCSCTTY takes an integer argument.
        let slave = unsafe { libc::open(tty.as_ptr(), libc::O_RDWR) };
        // SAFETY: as above.
        if slave < 0 || unsafe { libc::ioctl(slave, libc::TIOCSCTTY, 0) } < 0 {
            fail(last_errno());
        }
        for target in 0..3 {
            // SAFETY: dup2 between valid fds.
            if unsafe { libc::dup2(slave, target) } < 0 {
                fail(last_errno());
            }
        }
        if slave > 2 {
            // SAFETY: slave is our own fd, no longer needed.
            unsafe { libc::close(slave) };
        }
    } else {
        let stdin = match fds.stdin {
            Some(fd) => fd,
            // SAFETY: dev_null is a NUL-terminated path.
            None => unsafe { libc::open(plan.dev_null.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
        };
        for (from, target) in [(stdin, 0), (fds.stdout, 1), (fds.stderr, 2)] {
            // SAFETY: dup2 between fds; a failure (e.g. from == -1) is reported.
            if unsafe { libc::dup2(from, target) } < 0 {
                fail(last_errno());
            }
        }
    }
    // Root first: the working directory is then entered (and checked) as root.
    if plan.as_root {
        if let Err(e) = hooks.enter_root() {
            fail(e.raw_os_error().unwrap_or(libc::EPERM));
        }
    }
    if let Some(cwd) = &plan.cwd {
        // SAFETY: cwd is a NUL-terminated path.
        if unsafe { libc::chdir(cwd.as_ptr()) } < 0 {
            fail(last_errno());
        }
    }
    if let Err(e) = hooks.pre_exec() {
        fail(e.raw_os_error().unwrap_or(libc::EPERM));
    }
    // SAFETY: program, argv and envp are NUL-terminated strings and NULL-terminated arrays that
    // outlive the call (execve only returns on failure).
    unsafe { libc::execve(plan.program.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    fail(last_errno())
}
