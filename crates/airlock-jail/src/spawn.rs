//! Starting a box: clone into new namespaces, map the identity, let the caller place the box in
//! its cgroup, then release it. The code that runs inside lives in [`crate::child`].

use crate::child;
use crate::landlock::LandlockRules;
use crate::rlimits::RlimitPlan;
use crate::rootfs::RootfsPlan;
use crate::seccomp::SeccompProgram;
use crate::sys::{close, cvt, cvt_long, pipe, write_all};
use std::ffi::CString;
use std::io;

/// Which namespaces a box gets besides user, pid, ipc, uts and cgroup (always new).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespaces {
    /// A new mount namespace with a disposable root (isolated filesystem).
    pub mount: bool,
    /// A new network namespace with only loopback.
    pub net: bool,
}

/// How ids inside map to the caller's ids outside: exactly one uid and one gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdMap {
    pub inside_uid: u32,
    pub inside_gid: u32,
    pub host_uid: u32,
    pub host_gid: u32,
}

/// What the box's init does once the box is set up.
pub enum BoxMain {
    /// Run `argv` as the box's one command, supervise it and report its exit. With `root_at`,
    /// init first makes the box's root (see [`crate::box_root`]) and the command starts with
    /// that user namespace open at descriptor `root_at` (≥ 3), not close-on-exec: a template
    /// build's root steps join it (`nsenter --user=/proc/self/fd/N`), which gives them uid 0
    /// there and capabilities over nothing the box owns.
    Command { root_at: Option<libc::c_int> },
    /// Restrict init itself exactly like a command (rlimits, no capabilities, Landlock,
    /// no_new_privs, seccomp), keep only stderr and `keep_fd` open (stdin and stdout become
    /// /dev/null), then call `main` (e.g. the agent's serve loop) and exit with what it returns.
    /// Every process it starts inherits the restrictions.
    Serve {
        keep_fd: libc::c_int,
        /// Make the box's root (see [`crate::box_root`]) before init restricts itself, and give
        /// `main` its descriptor. Needs the box's mount namespace (its own /proc).
        root: bool,
        main: Box<dyn Fn(ServeContext) -> i32>,
    },
}

/// What a [`BoxMain::Serve`] main gets from the box's init.
pub struct ServeContext {
    /// The box's root namespace (with `root`), for [`crate::box_root::enter`].
    pub root: Option<std::os::fd::OwnedFd>,
}

/// Everything a box needs, prepared before it is started (the box's side only executes it).
pub struct BoxSpec {
    pub main: BoxMain,
    pub argv: Vec<CString>,
    /// Paths to try, in order, for argv[0] (the PATH search is planned outside).
    pub program_candidates: Vec<CString>,
    /// `NAME=VALUE` entries: the complete environment.
    pub env: Vec<CString>,
    pub cwd: CString,
    pub namespaces: Namespaces,
    pub ids: IdMap,
    pub rootfs: Option<RootfsPlan>,
    pub rlimits: RlimitPlan,
    pub landlock: Option<LandlockRules>,
    pub seccomp: Option<SeccompProgram>,
    /// Detached mounts made by the supervisor (idmapped grants), attached by the box's init at
    /// these inside paths instead of a plain bind.
    pub premade_mounts: Vec<(std::path::PathBuf, libc::c_int)>,
    /// For a proxied box: the box's init creates a listener on 127.0.0.1:`port` inside the box's
    /// network namespace and sends it over `channel` (a unix socket) to the supervisor.
    pub proxy_listener: Option<ProxyListener>,
    /// For a box whose workspace has a change layer: the box's end of a unix socket over which
    /// its init sends a descriptor of the layer (see [`crate::rootfs::enter`]).
    pub changes_channel: Option<libc::c_int>,
    /// Descriptors on which the box's init moves itself into its cgroup before any of its code
    /// runs (see [`crate::cgroup::BoxCgroup::self_join_files`]); owned by the supervisor, the
    /// init closes its copies. Empty when the supervisor places it instead (`spawn`'s `place`).
    pub cgroup_join: Vec<libc::c_int>,
}

/// Where the box's proxy listener is made and how it reaches the supervisor.
#[derive(Debug, Clone, Copy)]
pub struct ProxyListener {
    pub port: u16,
    /// The box's end of a unix socket pair; the supervisor holds the other end.
    pub channel: libc::c_int,
}

/// The descriptors the box's command gets as stdin, stdout and stderr.
#[derive(Debug, Clone, Copy)]
pub struct StdioFds {
    pub stdin: libc::c_int,
    pub stdout: libc::c_int,
    pub stderr: libc::c_int,
    /// Make stdin the command's controlling terminal (it is a pty slave).
    pub controlling_tty: bool,
}

/// Errors starting a box.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("airlock must start boxes from a single-threaded process ({0} threads found): the box's setup runs between clone and exec")]
    Threaded(usize),
    #[error("cannot create the box's namespaces: {0}; check that unprivileged user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")]
    Clone(#[source] io::Error),
    #[error("cannot write the box's {file}: {source}")]
    IdMap {
        file: &'static str,
        source: io::Error,
    },
    #[error("cannot prepare the box: {0}")]
    Prepare(#[source] io::Error),
    #[error("cannot place the box in its cgroup: {0}")]
    Place(String),
}

/// A started box: its init process and the channel it reports on.
#[derive(Debug)]
pub struct SpawnedBox {
    pub pid: libc::pid_t,
    /// A pidfd for the box's init (pollable; readable when it exits).
    pub pidfd: libc::c_int,
    /// Read end of the box's status channel (see [`child::StatusRecord`]).
    pub status_fd: libc::c_int,
    /// Write end of the go pipe, held open while the supervisor lives: the box's init checks it
    /// to notice a supervisor that died before the parent-death signal was armed.
    pub go_fd: libc::c_int,
}

#[repr(C)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(1)
}

/// Starts a box. `place` runs after the box exists but before any of its code runs (to move it
/// into a cgroup); if it fails the box is killed and the error returned.
///
/// Must be called from a single-threaded process: the box's setup runs in the cloned child
/// without exec, and allocates.
pub fn spawn(
    spec: &BoxSpec,
    stdio: StdioFds,
    place: impl FnOnce(libc::pid_t) -> Result<(), String>,
) -> Result<SpawnedBox, SpawnError> {
    let threads = thread_count();
    if threads > 1 {
        return Err(SpawnError::Threaded(threads));
    }
    let (go_r, go_w) = pipe().map_err(SpawnError::Prepare)?;
    let (st_r, st_w) = match pipe() {
        Ok(p) => p,
        Err(e) => {
            close(go_r);
            close(go_w);
            return Err(SpawnError::Prepare(e));
        }
    };
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP
        | libc::CLONE_PIDFD;
    if spec.namespaces.mount {
        flags |= libc::CLONE_NEWNS;
    }
    if spec.namespaces.net {
        flags |= libc::CLONE_NEWNET;
    }
    let mut pidfd: libc::c_int = -1;
    let args = CloneArgs {
        flags: flags as u64,
        pidfd: &mut pidfd as *mut libc::c_int as u64,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: 0,
    };
    // SAFETY: clone3 with a null stack behaves like fork: the child continues on a copy of this
    // stack. The process is single-threaded (checked above), so no lock can be held by another
    // thread in the child's copy of memory.
    let ret = unsafe { libc::syscall(libc::SYS_clone3, &args, std::mem::size_of::<CloneArgs>()) };
    if ret == -1 {
        let err = io::Error::last_os_error();
        for fd in [go_r, go_w, st_r, st_w] {
            close(fd);
        }
        return Err(SpawnError::Clone(err));
    }
    if ret == 0 {
        close(go_w);
        close(st_r);
        child::box_init(spec, stdio, go_r, st_w);
    }
    let pid = ret as libc::pid_t;
    close(go_r);
    close(st_w);
    let started = SpawnedBox {
        pid,
        pidfd,
        status_fd: st_r,
        go_fd: go_w,
    };
    let release = write_id_maps(pid, &spec.ids)
        .and_then(|_| place(pid).map_err(SpawnError::Place))
        .and_then(|_| write_all(go_w, b"g").map_err(SpawnError::Prepare));
    if let Err(e) = release {
        started.kill();
        started.reap();
        close(started.status_fd);
        close(started.pidfd);
        close(started.go_fd);
        return Err(e);
    }
    Ok(started)
}

fn write_id_maps(pid: libc::pid_t, ids: &IdMap) -> Result<(), SpawnError> {
    let write = |file: &'static str, text: String| {
        std::fs::write(format!("/proc/{pid}/{file}"), text)
            .map_err(|source| SpawnError::IdMap { file, source })
    };
    write(
        "uid_map",
        format!("{} {} 1\n", ids.inside_uid, ids.host_uid),
    )?;
    write("setgroups", "deny\n".into())?;
    write(
        "gid_map",
        format!("{} {} 1\n", ids.inside_gid, ids.host_gid),
    )?;
    Ok(())
}

impl SpawnedBox {
    /// Sends a signal to the box's init (race-free through the pidfd).
    pub fn signal(&self, sig: libc::c_int) -> io::Result<()> {
        // SAFETY: pidfd is a valid pidfd owned by self; the info pointer may be null.
        cvt_long(unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        })?;
        Ok(())
    }

    /// SIGKILLs the box's init; the kernel then kills every process in the box's pid namespace.
    pub fn kill(&self) {
        let _ = self.signal(libc::SIGKILL);
    }

    /// Waits for the box's init to exit and returns its wait status.
    pub fn reap(&self) -> Option<libc::c_int> {
        let mut status = 0;
        loop {
            // SAFETY: status is a valid int for waitpid to fill; pid is our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                return Some(status);
            }
            if r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }

    /// Reaps the box's init if it exits before `deadline`, watching its pidfd (so its end is
    /// seen the moment it comes, not at the next tick of a polling sleep); `None` if it still
    /// runs then.
    pub fn reap_by(&self, deadline: std::time::Instant) -> Option<libc::c_int> {
        loop {
            if let Some(status) = self.try_reap() {
                return Some(status);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            if !crate::sys::wait_readable(&[self.pidfd], deadline) {
                // Not pollable (it cannot happen with a pidfd from clone3), or the deadline
                // came: a short pause before the reap is tried again.
                std::thread::sleep(left.min(std::time::Duration::from_millis(2)));
            }
        }
    }

    /// Non-blocking reap: the wait status if init has exited.
    pub fn try_reap(&self) -> Option<libc::c_int> {
        let mut status = 0;
        // SAFETY: as in reap, with WNOHANG.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        (r == self.pid).then_some(status)
    }
}

/// Marks a descriptor close-on-exec (used for descriptors the caller keeps).
pub fn set_cloexec(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: fcntl on an fd with integer arguments.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) })?;
    Ok(())
}
