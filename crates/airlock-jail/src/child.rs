//! Code that runs inside the box, between clone and exec. Two processes:
//!
//! - **init** (pid 1 of the box's pid namespace): builds the root, sets up the network and host
//!   name, starts the command, forwards signals to it, reaps every orphan, and reports the
//!   command's exit on the status channel. It dies with the supervisor (PR_SET_PDEATHSIG), and
//!   when it dies the kernel kills everything left in the box.
//! - **command**: drops every capability, applies rlimits, Landlock and (last) seccomp, and execs.
//!
//! The supervisor is single-threaded when it clones (checked by `spawn`), so allocating here is
//! safe. Errors are reported as text records on the status channel, never by panicking.

use crate::spawn::{BoxMain, BoxSpec, ServeContext, StdioFds};
use crate::sys::write_all;
use std::io;

/// Exit code of the box's init when its setup failed (mirrors `airlock`'s own failure code).
pub const SETUP_FAILED: i32 = 125;

/// A record on the status channel, parsed by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusRecord {
    /// Setup failed at `stage` (e.g. "rootfs", "landlock", "exec").
    Error {
        stage: String,
        message: String,
        errno: i32,
    },
    /// The command ended: its wait status, CPU time (µs) and peak RSS (KiB).
    Exit {
        wait_status: i32,
        user_us: u64,
        system_us: u64,
        max_rss_kib: u64,
    },
}

impl StatusRecord {
    /// Parses the whole channel content (one record per line); unknown lines are ignored.
    pub fn parse_all(text: &str) -> Vec<StatusRecord> {
        text.lines().filter_map(StatusRecord::parse).collect()
    }

    fn parse(line: &str) -> Option<StatusRecord> {
        if let Some(rest) = line.strip_prefix("E\t") {
            let mut parts = rest.splitn(3, '\t');
            let stage = parts.next()?.to_string();
            let errno = parts.next()?.parse().ok()?;
            let message = parts.next().unwrap_or("").to_string();
            return Some(StatusRecord::Error {
                stage,
                message,
                errno,
            });
        }
        let rest = line.strip_prefix("X\t")?;
        let v: Vec<&str> = rest.split('\t').collect();
        if v.len() != 4 {
            return None;
        }
        Some(StatusRecord::Exit {
            wait_status: v[0].parse().ok()?,
            user_us: v[1].parse().ok()?,
            system_us: v[2].parse().ok()?,
            max_rss_kib: v[3].parse().ok()?,
        })
    }
}

fn report_error(fd: libc::c_int, stage: &str, err: &dyn std::fmt::Display, errno: i32) {
    let msg = err.to_string().replace(['\n', '\t'], " ");
    let _ = write_all(fd, format!("E\t{stage}\t{errno}\t{msg}\n").as_bytes());
}

fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

fn exit(code: i32) -> ! {
    // SAFETY: _exit never returns and is async-signal-safe.
    unsafe { libc::_exit(code) }
}

/// Signals init forwards to the command's process group.
const FORWARDED: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

fn signal_set(with_chld: bool) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &s in FORWARDED {
        // SAFETY: set is a valid, initialised sigset_t.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    if with_chld {
        // SAFETY: as above.
        unsafe { libc::sigaddset(&mut set, libc::SIGCHLD) };
    }
    set
}

/// The box's init. Never returns.
pub(crate) fn box_init(
    spec: &BoxSpec,
    stdio: StdioFds,
    go_fd: libc::c_int,
    status_fd: libc::c_int,
) -> ! {
    // Die with the supervisor. If it is already gone, the go byte never comes (EOF below).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    let mut byte = [0u8; 1];
    // SAFETY: byte is a valid 1-byte buffer.
    let n = unsafe { libc::read(go_fd, byte.as_mut_ptr().cast(), 1) };
    if n != 1 {
        exit(SETUP_FAILED);
    }
    // Join the box's cgroup before anything else runs, while this is still the creator's
    // identity (the kernel checks the box's credentials against the descriptors' opener).
    if let Err(e) = crate::cgroup::join_self(&spec.cgroup_join) {
        report_error(status_fd, "cgroup", &e, errno_of(&e));
        exit(SETUP_FAILED);
    }
    for &fd in &spec.cgroup_join {
        crate::sys::close(fd);
    }
    // The id maps are written now: become the box's user (keeping this namespace's
    // capabilities for the setup). Changing credentials clears the parent-death signal, so arm
    // it again, then make sure the supervisor did not die in between: it keeps its end of the
    // go pipe open for as long as it lives.
    if let Err(e) = crate::caps::become_user_keeping_caps(spec.ids.inside_uid, spec.ids.inside_gid)
    {
        report_error(status_fd, "identity", &e, errno_of(&e));
        exit(SETUP_FAILED);
    }
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    let mut pfd = libc::pollfd {
        fd: go_fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let polled = unsafe { libc::poll(&mut pfd, 1, 0) };
    if polled != 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
        exit(SETUP_FAILED);
    }
    crate::sys::close(go_fd);
    // Init is a copy of airlock, whose environment (the caller's, secrets included) and command
    // line sit in this process's memory and show in /proc/1/environ and /proc/1/cmdline. Make
    // init non-dumpable (its /proc files but cmdline are then closed to the box's processes) and
    // overwrite that memory, so neither path leaks it. Only now: a non-dumpable process's /proc
    // files belong to root, and an unprivileged supervisor must first write this process's
    // uid_map (and a credential change resets dumpability).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if let Err(e) = crate::init_memory::hide_command_line(crate::identity::INIT_NAME) {
        report_error(status_fd, "init", &e, errno_of(&e));
        exit(SETUP_FAILED);
    }
    if let Err((stage, e)) = setup(spec, stdio.controlling_tty.then_some(stdio.stdin)) {
        report_error(status_fd, stage, &e, errno_of(&e));
        exit(SETUP_FAILED);
    }
    if let BoxMain::Serve {
        keep_fd,
        root,
        main,
    } = &spec.main
    {
        serve(spec, *keep_fd, *root, main.as_ref(), status_fd);
    }
    // The box's root for the command, made before anything is restricted (see serve).
    let root = match spec.main {
        BoxMain::Command { root_at: Some(at) } => {
            match crate::box_root::make(
                spec.ids.inside_uid,
                spec.ids.inside_gid,
                crate::box_root::Maker::AsCaller,
            ) {
                Ok(fd) => Some((fd, at)),
                Err(e) => {
                    report_error(status_fd, "root namespace", &e, errno_of(&e));
                    exit(SETUP_FAILED);
                }
            }
        }
        _ => None,
    };
    // Block forwarded signals and SIGCHLD before the command exists, so none is lost; the
    // command unblocks them before exec.
    let set = signal_set(true);
    // SAFETY: set is a valid sigset_t; the old mask is not needed.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    // SAFETY: fork in the single-threaded box init.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        let e = io::Error::last_os_error();
        report_error(status_fd, "fork", &e, errno_of(&e));
        exit(SETUP_FAILED);
    }
    if pid == 0 {
        use std::os::fd::AsRawFd;
        command(
            spec,
            stdio,
            status_fd,
            root.as_ref().map(|(fd, at)| (fd.as_raw_fd(), *at)),
        );
    }
    drop(root);
    // Init keeps nothing but the status channel: the command's output pipes must reach EOF when
    // the command's processes are gone.
    for fd in [stdio.stdin, stdio.stdout, stdio.stderr, 0, 1, 2] {
        if fd != status_fd {
            crate::sys::close(fd);
        }
    }
    supervise(pid, status_fd)
}

type StageError = (&'static str, io::Error);

fn setup(spec: &BoxSpec, console: Option<libc::c_int>) -> Result<(), StageError> {
    // SAFETY: setsid has no arguments; init is not a process group leader.
    unsafe { libc::setsid() };
    let mut changes = None;
    if let Some(plan) = &spec.rootfs {
        changes = crate::rootfs::enter(plan, console, &spec.premade_mounts)
            .map_err(|e| ("rootfs", io::Error::new(e.source.kind(), e.to_string())))?;
    }
    // The change layer goes to the supervisor, which applies it once every box process is
    // gone; the box's init keeps no copy.
    if let Some(layer) = changes {
        let sent = match spec.changes_channel {
            Some(ch) => crate::net::send_fd(ch, layer),
            None => Ok(()),
        };
        crate::sys::close(layer);
        if let Some(ch) = spec.changes_channel {
            crate::sys::close(ch);
        }
        sent.map_err(|e| ("change layer", e))?;
    }
    let name = crate::identity::HOSTNAME;
    // SAFETY: name points at name.len() valid bytes.
    crate::sys::cvt(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) })
        .map_err(|e| ("hostname", e))?;
    if spec.namespaces.net {
        crate::net::loopback_up().map_err(|e| ("loopback", e))?;
    }
    if let Some(proxy) = &spec.proxy_listener {
        let fd = crate::net::listen_loopback(proxy.port).map_err(|e| ("proxy listener", e))?;
        let sent = crate::net::send_fd(proxy.channel, fd);
        crate::sys::close(fd);
        crate::sys::close(proxy.channel);
        sent.map_err(|e| ("proxy listener", e))?;
    }
    Ok(())
}

fn supervise(command: libc::pid_t, status_fd: libc::c_int) -> ! {
    let set = signal_set(true);
    loop {
        // SAFETY: info is plain data for sigwaitinfo to fill; set is a valid sigset.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
        if sig == -1 {
            continue;
        }
        if sig != libc::SIGCHLD {
            // Forward to the command's process group, falling back to the command itself.
            // SAFETY: kill with integer arguments.
            if unsafe { libc::kill(-command, sig) } == -1 {
                // SAFETY: as above.
                unsafe { libc::kill(command, sig) };
            }
            continue;
        }
        loop {
            let mut status = 0;
            // SAFETY: rusage is plain data for wait4 to fill.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: status and usage are valid out-pointers.
            let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
            if pid <= 0 {
                break;
            }
            if pid == command {
                // Include every descendant reaped so far in the CPU and memory figures.
                // SAFETY: all is plain data for getrusage to fill.
                let mut all: libc::rusage = unsafe { std::mem::zeroed() };
                // SAFETY: valid out-pointer.
                unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut all) };
                let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
                let line = format!(
                    "X\t{status}\t{}\t{}\t{}\n",
                    us(all.ru_utime),
                    us(all.ru_stime),
                    all.ru_maxrss.max(usage.ru_maxrss)
                );
                let _ = write_all(status_fd, line.as_bytes());
                // Init exits: the kernel kills whatever the command left behind.
                exit(0);
            }
        }
    }
}

/// Serve mode: init restricts itself like a command, then runs the caller's main loop.
fn serve(
    spec: &BoxSpec,
    keep_fd: libc::c_int,
    root: bool,
    main: &dyn Fn(ServeContext) -> i32,
    status_fd: libc::c_int,
) -> ! {
    use std::os::fd::AsRawFd;
    let root = match root {
        false => None,
        true => match crate::box_root::make(
            spec.ids.inside_uid,
            spec.ids.inside_gid,
            crate::box_root::Maker::AsCaller,
        ) {
            Ok(fd) => Some(fd),
            Err(e) => {
                report_error(status_fd, "root namespace", &e, errno_of(&e));
                exit(SETUP_FAILED);
            }
        },
    };
    // Nothing of the supervisor's stays open in the box but stderr, the status channel (closed
    // below) and the descriptor the caller keeps.
    // SAFETY: opening /dev/null inside the box with a static C string.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
    if null >= 0 {
        // SAFETY: dup2 onto stdin and stdout.
        unsafe {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
        }
    }
    let mut keep = vec![keep_fd, status_fd];
    keep.extend(root.as_ref().map(|fd| fd.as_raw_fd()));
    keep.sort_unstable();
    let mut from = 3;
    for fd in keep {
        if fd > from {
            // SAFETY: close_range with integer arguments.
            unsafe { libc::syscall(libc::SYS_close_range, from as u32, (fd - 1) as u32, 0u32) };
        }
        from = from.max(fd + 1);
    }
    // SAFETY: close_range with integer arguments.
    unsafe { libc::syscall(libc::SYS_close_range, from as u32, u32::MAX, 0u32) };
    // SAFETY: spec.cwd is a valid C string.
    if unsafe { libc::chdir(spec.cwd.as_ptr()) } == -1 {
        let e = io::Error::last_os_error();
        report_error(
            status_fd,
            "cwd",
            &format!("cannot enter working directory {:?}: {e}", spec.cwd),
            errno_of(&e),
        );
        exit(SETUP_FAILED);
    }
    if let Err((stage, message, errno)) = restrict(spec) {
        report_error(status_fd, stage, &message, errno);
        exit(SETUP_FAILED);
    }
    crate::sys::close(status_fd);
    // What building the box left free in init's heap goes back before init serves (and idles).
    crate::heap::trim();
    exit(main(ServeContext { root }))
}

/// The restrictions every process of the box runs under, applied to the calling process:
/// rlimits, no capabilities, Landlock, no_new_privs and, last, seccomp.
fn restrict(spec: &BoxSpec) -> Result<(), (&'static str, String, i32)> {
    spec.rlimits
        .apply()
        .map_err(|e| ("rlimits", e.to_string(), errno_of(&e)))?;
    crate::caps::drop_all().map_err(|e| ("capabilities", e.to_string(), errno_of(&e)))?;
    if let Some(rules) = &spec.landlock {
        crate::landlock::apply(rules).map_err(|e| ("landlock", e.to_string(), 0))?;
    }
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == -1 {
        let e = io::Error::last_os_error();
        return Err(("no_new_privs", e.to_string(), errno_of(&e)));
    }
    if let Some(prog) = &spec.seccomp {
        prog.install().map_err(|e| ("seccomp", e.to_string(), 0))?;
    }
    Ok(())
}

/// The command's process, with the box's root namespace `(descriptor, where the command gets
/// it)` when asked for. Never returns.
fn command(
    spec: &BoxSpec,
    stdio: StdioFds,
    status_fd: libc::c_int,
    root: Option<(libc::c_int, libc::c_int)>,
) -> ! {
    // The root namespace's place must be free: the status channel moves out of its way.
    let status_fd = match root {
        Some((_, at)) if status_fd == at => {
            // SAFETY: fcntl duplicates a descriptor we hold to a free number above `at`.
            match unsafe { libc::fcntl(status_fd, libc::F_DUPFD_CLOEXEC, at + 1) } {
                -1 => exit(SETUP_FAILED),
                moved => moved,
            }
        }
        _ => status_fd,
    };
    let fail = |stage: &str, e: &dyn std::fmt::Display, errno: i32, code: i32| -> ! {
        report_error(status_fd, stage, e, errno);
        exit(code)
    };
    // Default dispositions for everything (the supervisor may ignore SIGPIPE, and ignored
    // signals survive exec), then unblock what init blocked.
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: resetting a signal disposition to its default.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
    let set = signal_set(true);
    // SAFETY: set is a valid sigset; unblocking what init blocked.
    unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    // SAFETY: setsid: the command leads its own session (no controlling terminal of the caller).
    unsafe { libc::setsid() };
    for (from, to) in [(stdio.stdin, 0), (stdio.stdout, 1), (stdio.stderr, 2)] {
        // SAFETY: dup2 on descriptors we hold.
        if from != to && unsafe { libc::dup2(from, to) } == -1 {
            let e = io::Error::last_os_error();
            fail("stdio", &e, errno_of(&e), SETUP_FAILED);
        }
    }
    if stdio.controlling_tty {
        // SAFETY: ioctl on fd 0, a pty slave, with an integer argument.
        if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } == -1 {
            let e = io::Error::last_os_error();
            fail("tty", &e, errno_of(&e), SETUP_FAILED);
        }
    }
    // Everything above stdio closes at exec (the status channel is already close-on-exec).
    // SAFETY: close_range with integer arguments.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if let Some((fd, at)) = root {
        if at < 3 {
            let e = io::Error::from_raw_os_error(libc::EBADF);
            fail("root namespace", &e, libc::EBADF, SETUP_FAILED);
        }
        // SAFETY: dup2 between descriptors we hold; the copy at `at` is not close-on-exec
        // (when fd already is `at`, its flag is cleared instead).
        let placed = unsafe {
            if fd == at {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, at)
            }
        };
        if placed == -1 {
            let e = io::Error::last_os_error();
            fail("root namespace", &e, errno_of(&e), SETUP_FAILED);
        }
    }
    // SAFETY: spec.cwd is a valid C string.
    if unsafe { libc::chdir(spec.cwd.as_ptr()) } == -1 {
        let e = io::Error::last_os_error();
        fail(
            "cwd",
            &format!("cannot enter working directory {:?}: {e}", spec.cwd),
            errno_of(&e),
            SETUP_FAILED,
        );
    }
    let mut argv: Vec<*const libc::c_char> = spec.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = spec.env.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    // Seccomp is the last restriction: nothing after it but execve.
    if let Err((stage, message, errno)) = restrict(spec) {
        fail(stage, &message, errno, SETUP_FAILED);
    }
    let mut last = libc::ENOENT;
    for candidate in &spec.program_candidates {
        // SAFETY: candidate, argv and envp are NUL-terminated and outlive the call.
        unsafe { libc::execve(candidate.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        let errno = errno_of(&io::Error::last_os_error());
        if errno != libc::ENOENT && errno != libc::ENOTDIR {
            last = errno;
            if errno != libc::EACCES {
                break;
            }
        }
    }
    let name = spec
        .argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let code = if last == libc::ENOENT { 127 } else { 126 };
    let e = io::Error::from_raw_os_error(last);
    fail(
        "exec",
        &format!("cannot run {name:?} inside the box: {e}"),
        last,
        code,
    )
}
