//! One host process exec'd per program, from which every native box's host is cloned, instead
//! of an `exec` per box.
//!
//! `exec` of a position-independent executable relocates it: the dynamic loader writes every
//! page of its relocated read-only data (`.data.rel.ro`, ~170 KiB for `airlock-sandbox-host`)
//! and of its libraries' (~100 KiB more), and those written pages are that process's own. Every
//! idle box paid ~270 KiB for them (its host and its init, a fork of the host, share one copy).
//! Cloned from one relocated process instead, every box's host and init share the zygote's
//! copy: the pages are never written again (they are read-only after relocation), so nothing
//! is copied. BENCHMARKS.md "Idle density" has the figures.
//!
//! The program starts the zygote with its first native box (`airlock-sandbox-host` with its
//! channel at descriptor 3, told what it is by a first [`HELLO`] message) and keeps it until
//! it exits. For each box it sends the
//! host's control socket down the channel (SCM_RIGHTS); the zygote clones itself with
//! `CLONE_PARENT`, so the new host is the *program's* child, exactly as an exec'd one: the
//! program waits for it, reaps it and kills it by pid, and its parent-death signal is tied to
//! the program. The child puts the socket at descriptor 3 and runs
//! [`crate::sandbox_host_main`]; the zygote replies with its pid. No descriptor per box is
//! added to the program's (a pidfd each would be; the server's descriptor reserve counts two).
//!
//! What a clone shares that an exec would not: the address-space layout (every host and init
//! of one program has the zygote's, where each exec'd host had its own; docs/threat-model.md)
//! and the environment as it was when the zygote started. The zygote never sees a start
//! message, so it holds no secret and a host inherits none. Killing the zygote ends no box.
//! Where no zygote can be had (or `AIRLOCK_HOST_ZYGOTE=off` is set, for comparisons) each host
//! is exec'd as before.

use crate::spawned_host::SpawnedHost;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The first message on a host program's descriptor 3 that makes it the zygote.
pub const HELLO: &[u8] = b"zygote";
/// A request: make a host for the control socket attached.
const FORK: &[u8] = b"host";
/// The environment variable that turns the zygote off (`off`), for comparisons.
pub const ENV: &str = "AIRLOCK_HOST_ZYGOTE";
/// How long the program waits for the zygote's reply before it gives up on that zygote.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// The program's zygote, once started.
struct Zygote {
    channel: OwnedFd,
    child: SpawnedHost,
}

/// The program's zygote: started with its first native box, kept until the program exits (its
/// channel closes then, or its parent-death signal comes). Kept between boxes rather than
/// stopped with the last one: a pool's claim and delete would otherwise stop it and its refill
/// exec a new one, the cost the zygote is there to save. An idle zygote holds no secret and
/// shares its pages with every host.
static ZYGOTE: Mutex<Option<Zygote>> = Mutex::new(None);

/// Closes the zygote's channel (it exits at once) and reaps it in the background.
fn stop(Zygote { channel, mut child }: Zygote) {
    drop(channel);
    let reaper = std::thread::Builder::new()
        .name("zygote-reaper".into())
        .spawn(move || child.wait());
    if reaper.is_err() {
        eprintln!(
            "airlock: cannot wait for the ended host zygote: it stays a zombie until airlock exits"
        );
    }
}

/// Whether the environment turned the zygote off.
fn turned_off() -> bool {
    std::env::var_os(ENV).is_some_and(|v| v == "off")
}

/// A host for `control`, made by the program's zygote (started from `exe` when there is
/// none) as the program's own child. `Ok(None)` when no zygote can be had and no host was
/// made: the caller then execs the host itself. `Err` when the zygote was asked but did not
/// answer: a host may then hold `control`, so the caller must not hand it to another (the
/// zygote is replaced for the next box).
pub(crate) fn fork_host(
    exe: &Path,
    control: BorrowedFd<'_>,
) -> Result<Option<SpawnedHost>, String> {
    if turned_off() {
        return Ok(None);
    }
    let mut zygote = ZYGOTE.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..2 {
        if zygote.is_none() {
            match start(exe) {
                Ok(z) => *zygote = Some(z),
                Err(e) => {
                    eprintln!("airlock: cannot start the host zygote ({e}); each box's host is started on its own");
                    return Ok(None);
                }
            }
        }
        let Some(z) = zygote.as_ref() else {
            return Ok(None);
        };
        let asked =
            airlock_jail::net::send_with_fds(z.channel.as_raw_fd(), FORK, &[control.as_raw_fd()]);
        if asked.is_err() {
            // It is gone (EPIPE) and never saw the socket: start another and ask again.
            if let Some(mut old) = zygote.take() {
                old.child.kill();
                stop(old);
            }
            continue;
        }
        let mut buf = [0u8; 256];
        let reply =
            airlock_jail::net::recv_with_fds(z.channel.as_raw_fd(), &mut buf, 1).map(|(n, fds)| {
                // The zygote attaches none; one that came anyway is closed here.
                // SAFETY: a descriptor received over SCM_RIGHTS is new here, and ours.
                drop(
                    fds.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
                        .collect::<Vec<_>>(),
                );
                n
            });
        let text = match &reply {
            Ok(n) => String::from_utf8_lossy(&buf[..*n]).into_owned(),
            Err(_) => String::new(),
        };
        return match (reply, text.parse::<libc::pid_t>()) {
            (Ok(n), Ok(pid)) if n > 0 && pid > 0 => Ok(Some(SpawnedHost::adopted(pid))),
            (Ok(n), _) if n > 0 => {
                eprintln!("airlock: the host zygote cannot make a host ({text}); this box's host is started on its own");
                Ok(None)
            }
            (reply, _) => {
                if let Some(mut old) = zygote.take() {
                    old.child.kill();
                    stop(old);
                }
                let why = match reply {
                    Err(e) => format!("the host zygote did not answer: {e}"),
                    Ok(_) => "the host zygote ended before it answered".to_string(),
                };
                Err(format!("{why}; the next box starts a new zygote (or set {ENV}=off to start each box's host on its own)"))
            }
        };
    }
    Ok(None)
}

fn start(exe: &Path) -> io::Result<Zygote> {
    let (ours, theirs) = airlock_jail::net::seqpacket_pair()?;
    let tv = libc::timeval {
        tv_sec: REPLY_TIMEOUT.as_secs() as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: setsockopt on our socket with a timeval that outlives the call.
    if unsafe {
        libc::setsockopt(
            ours.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    } == -1
    {
        return Err(io::Error::last_os_error());
    }
    let mut child = SpawnedHost::spawn(exe, &[], theirs.as_fd())?;
    if let Err(e) = airlock_jail::net::send_with_fds(ours.as_raw_fd(), HELLO, &[]) {
        child.kill();
        child.wait();
        return Err(e);
    }
    Ok(Zygote {
        channel: ours,
        child,
    })
}

/// Whether the program asked this host process (on `control`, its descriptor 3) to be the
/// zygote; the question is taken off the channel when it did. A host's start message is
/// left where it is.
pub fn asked(control: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16];
    let recv = |buf: &mut [u8], flags: libc::c_int| loop {
        // SAFETY: recv into a buffer we own, of its length.
        let n = unsafe {
            libc::recv(
                control.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
            )
        };
        if n != -1 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return n;
        }
    };
    let n = recv(&mut buf, libc::MSG_PEEK);
    if usize::try_from(n).ok() != Some(HELLO.len()) || &buf[..HELLO.len()] != HELLO {
        return false;
    }
    // Takes the message just peeked at.
    recv(&mut buf, 0) == n
}

/// The zygote: makes a host (running `host_main` on its control socket) for each request on
/// `channel`, until the program closes it or is gone. Must run single-threaded (it clones
/// itself). Returns the exit code.
pub fn zygote_main(channel: OwnedFd, host_main: fn(OwnedFd) -> i32) -> i32 {
    // SAFETY: prctl with a NUL-terminated name (15 characters at most), then a signal number.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"airlock-zygote".as_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // SAFETY: getppid cannot fail; 1 means the program is already gone.
    if unsafe { libc::getppid() } == 1 {
        return 1;
    }
    match serve(&channel, host_main) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("airlock host zygote: {e}");
            1
        }
    }
}

fn serve(channel: &OwnedFd, host_main: fn(OwnedFd) -> i32) -> io::Result<()> {
    let mut buf = [0u8; 64];
    loop {
        let (n, received) = match airlock_jail::net::recv_with_fds(channel.as_raw_fd(), &mut buf, 1)
        {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let received: Vec<OwnedFd> = received
            .into_iter()
            // SAFETY: a descriptor received over SCM_RIGHTS is new here, and ours.
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
            .collect();
        if n == 0 && received.is_empty() {
            // The program closed the channel (its last native box ended) or is gone.
            return Ok(());
        }
        let reply = match (&buf[..n], received.as_slice()) {
            (FORK, [control]) => make_host(control, channel.as_raw_fd(), host_main),
            _ => Err(format!(
                "unexpected request of {n} bytes with {} descriptors",
                received.len()
            )),
        };
        drop(received);
        let text = match reply {
            Ok(pid) => pid.to_string(),
            Err(why) => why,
        };
        airlock_jail::net::send_with_fds(channel.as_raw_fd(), text.as_bytes(), &[])?;
    }
}

/// Makes a host on `control` as a child of the program (our parent), not of ours:
/// `clone(CLONE_PARENT)`, a fork in every other way. So the program waits for it, reaps it
/// and signals it by pid as one it spawned, and its parent-death signal is tied to the program
/// as an exec'd host's is. Returns its pid. The child never returns.
fn make_host(
    control: &OwnedFd,
    channel: RawFd,
    host_main: fn(OwnedFd) -> i32,
) -> Result<libc::pid_t, String> {
    // SAFETY: clone without CLONE_VM and without a new stack is a fork: the child runs on a
    // copy of this stack. The zygote is single-threaded, so the child may run any code. glibc's
    // fork is not used (it has no CLONE_PARENT), so the child's thread descriptor keeps the
    // zygote's thread id; glibc reads it for nothing a host does (raise and abort ask the
    // kernel; the host's own forks set their children's).
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_PARENT | libc::SIGCHLD,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    match pid {
        -1 => Err(format!("clone: {}", io::Error::last_os_error())),
        0 => {
            let code = be_host(control, channel, host_main);
            std::process::exit(code)
        }
        pid => Ok(pid as libc::pid_t),
    }
}

/// The cloned child: becomes a host process as an exec'd one starts (its control socket at
/// descriptor 3, no descriptor of the zygote's, its own name).
fn be_host(control: &OwnedFd, channel: RawFd, host_main: fn(OwnedFd) -> i32) -> i32 {
    const CONTROL_FD: RawFd = crate::spawned_host::CONTROL_FD;
    // SAFETY: descriptor calls on descriptors this process holds; dup2 onto 3 replaces the
    // zygote's channel there (in this process only); the zygote's values that own them are
    // never dropped here (the process exits without unwinding).
    unsafe {
        if libc::dup2(control.as_raw_fd(), CONTROL_FD) == -1 {
            return 2;
        }
        if channel != CONTROL_FD {
            libc::close(channel);
        }
        libc::close(control.as_raw_fd());
        libc::prctl(libc::PR_SET_NAME, c"airlock-sandbox".as_ptr(), 0, 0, 0);
    }
    // SAFETY: descriptor 3 is the host's control socket, set just above; ours from here.
    host_main(unsafe { OwnedFd::from_raw_fd(CONTROL_FD) })
}
