//! One cleanup sentinel for every native box a program hosts, instead of one forked by each
//! box's host: a process, its page tables and its kernel stack per idle box (~140 KiB a box,
//! BENCHMARKS.md "Idle density").
//!
//! The program starts the service once (`airlock-sandbox-host --sentinel-service`, or `airlock
//! sandbox-host --sentinel-service`) with a SEQPACKET channel at descriptor 3. For each box it
//! makes a SEQPACKET pair, sends one end down the channel (SCM_RIGHTS) and hands the other to
//! the box's host with its start message. The host joins over it ([`Sentinel::join`]) and
//! registers what it makes as it would with a sentinel of its own. The service cleans up after
//! each connection that ends without `done` (its host died), and exits once its channel is
//! closed and no connection is left: when the program's last native box has ended (the program
//! closes the channel then, and starts a new service for its next box) or when the program is
//! gone. It asks for no parent-death signal, so a SIGKILLed server's boxes (their hosts die
//! with it) are still cleaned up.
//!
//! [`Sentinel::join`]: crate::sentinel::Sentinel::join

use crate::sentinel::{Done, Work, CLEAN, CLEANED, HELLO, OK};
use crate::spawned_host::SpawnedHost;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// The argument that makes a host program the shared sentinel.
pub const SERVICE_ARG: &str = "--sentinel-service";
/// The longest message a box's host sends (as to a sentinel of its own).
const MAX_MESSAGE: usize = libc::PATH_MAX as usize + 64;
/// The epoll token of the program's channel (connections use their descriptor).
const CHANNEL: u64 = u64::MAX;

/// The program's service, once started.
struct Service {
    channel: OwnedFd,
    child: SpawnedHost,
}

/// The service, and how many boxes hold a [`Lease`] on it.
struct State {
    service: Option<Service>,
    leases: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    service: None,
    leases: 0,
});

/// A box's hold on the service: the last one dropped stops it (its channel closes; it ends
/// once the boxes' connections have, and is reaped in the background), so nothing of airlock's
/// stays under a program whose boxes have all ended.
pub(crate) struct Lease(());

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        state.leases = state.leases.saturating_sub(1);
        if state.leases > 0 {
            return;
        }
        if let Some(Service { channel, mut child }) = state.service.take() {
            drop(channel);
            let reaper = std::thread::Builder::new()
                .name("sentinel-reaper".into())
                .spawn(move || child.wait());
            if reaper.is_err() {
                eprintln!("airlock: cannot wait for the ended cleanup sentinel: it stays a zombie until airlock exits");
            }
        }
    }
}

/// A new connection to the program's shared sentinel for one box's host, and the box's lease
/// on it, starting the service (`exe args… --sentinel-service`) when there is none (first use,
/// after the last box ended, or after it died). `None` when there is none to be had: the host
/// then forks a sentinel of its own, as it does when its `hello` goes unanswered.
pub(crate) fn connection(exe: &Path, args: &[&OsStr]) -> Option<(OwnedFd, Lease)> {
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    let conn = connect(&mut state.service, exe, args)?;
    state.leases += 1;
    Some((conn, Lease(())))
}

fn connect(service: &mut Option<Service>, exe: &Path, args: &[&OsStr]) -> Option<OwnedFd> {
    for _ in 0..2 {
        if service.is_none() {
            match start(exe, args) {
                Ok(s) => *service = Some(s),
                Err(e) => {
                    eprintln!("airlock: cannot start the shared cleanup sentinel: {e}");
                    return None;
                }
            }
        }
        let s = service.as_mut()?;
        let (ours, theirs) = airlock_jail::net::seqpacket_pair().ok()?;
        match airlock_jail::net::send_with_fds(s.channel.as_raw_fd(), b"box", &[theirs.as_raw_fd()])
        {
            Ok(()) => return Some(ours),
            Err(_) => {
                // The service is gone (EPIPE): reap it and start another.
                if let Some(mut old) = service.take() {
                    old.child.kill();
                    old.child.wait();
                }
            }
        }
    }
    None
}

fn start(exe: &Path, args: &[&OsStr]) -> io::Result<Service> {
    let (ours, theirs) = airlock_jail::net::seqpacket_pair()?;
    let mut all: Vec<&OsStr> = args.to_vec();
    all.push(OsStr::new(SERVICE_ARG));
    let child = SpawnedHost::spawn(exe, &all, theirs.as_fd())?;
    Ok(Service {
        channel: ours,
        child,
    })
}

/// What is done with a connection's registrations.
enum Job {
    /// Its host died: clean up.
    Orphaned(Work),
    /// Its host asked to clean up now: do, then answer on the connection and close it.
    Asked(Work, OwnedFd),
}

/// The service process: serves the program's channel (descriptor 3) until the program is gone
/// and every box's connection has ended. Returns the exit code.
pub fn sentinel_service_main(channel: OwnedFd) -> i32 {
    // Its name in `ps` and /proc/PID/comm (15 characters at most).
    // SAFETY: prctl with a NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"airlock-cleanup".as_ptr(), 0, 0, 0) };
    crate::sentinel::detach();
    match serve(&channel) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("airlock sentinel service: {e}");
            1
        }
    }
}

struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 with a flag; a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is new and ours.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: a valid epoll descriptor, a descriptor we hold and a valid event.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn serve(channel: &OwnedFd) -> io::Result<()> {
    let epoll = Epoll::new()?;
    epoll.ctl(libc::EPOLL_CTL_ADD, channel.as_raw_fd(), CHANNEL)?;
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    let cleaner = std::thread::Builder::new()
        .name("sentinel-cleaner".into())
        .spawn(move || {
            for job in queue {
                match job {
                    Job::Orphaned(work) => work.clean_up(),
                    Job::Asked(work, conn) => {
                        work.clean_up();
                        let _ = airlock_jail::net::send_with_fds(
                            conn.as_raw_fd(),
                            CLEANED.as_bytes(),
                            &[],
                        );
                    }
                }
            }
        })?;
    let mut conns: HashMap<RawFd, (OwnedFd, Work)> = HashMap::new();
    let mut program_gone = false;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
    while !(program_gone && conns.is_empty()) {
        // SAFETY: a valid epoll descriptor and a buffer of events.len() events.
        let n = unsafe {
            libc::epoll_wait(
                epoll.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                -1,
            )
        };
        if n == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in &events[..n as usize] {
            let token = ev.u64;
            if token == CHANNEL {
                match airlock_jail::net::recv_with_fds(channel.as_raw_fd(), &mut buf, 1) {
                    Ok((0, fds)) if fds.is_empty() => {
                        program_gone = true;
                        epoll.ctl(libc::EPOLL_CTL_DEL, channel.as_raw_fd(), 0)?;
                    }
                    Ok((_, fds)) => {
                        for fd in fds {
                            // SAFETY: a descriptor received over SCM_RIGHTS is new here.
                            let conn = unsafe { OwnedFd::from_raw_fd(fd) };
                            let raw = conn.as_raw_fd();
                            if epoll.ctl(libc::EPOLL_CTL_ADD, raw, raw as u64).is_ok() {
                                conns.insert(raw, (conn, Work::default()));
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        program_gone = true;
                        let _ = epoll.ctl(libc::EPOLL_CTL_DEL, channel.as_raw_fd(), 0);
                    }
                }
                continue;
            }
            let raw = token as RawFd;
            let Some((conn, work)) = conns.get_mut(&raw) else {
                continue;
            };
            let ended = match airlock_jail::net::recv_with_fds(
                conn.as_raw_fd(),
                &mut buf,
                airlock_jail::net::MAX_FDS,
            ) {
                Ok((0, fds)) if fds.is_empty() => Some(Ending::Orphaned),
                Ok((n, fds)) => {
                    let fds: Vec<OwnedFd> = fds
                        .into_iter()
                        // SAFETY: a descriptor received over SCM_RIGHTS is new here.
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
                        .collect();
                    let message = &buf[..n];
                    if message == HELLO.as_bytes() {
                        let _ =
                            airlock_jail::net::send_with_fds(conn.as_raw_fd(), OK.as_bytes(), &[]);
                        None
                    } else if message == CLEAN.as_bytes() {
                        Some(Ending::Asked)
                    } else if work.take(message, fds) == Done::Yes {
                        Some(Ending::Done)
                    } else {
                        None
                    }
                }
                // Interrupted, or a message too long for the buffer (dropped): keep listening.
                Err(e) if e.kind() == io::ErrorKind::Interrupted || e.raw_os_error().is_none() => {
                    None
                }
                Err(_) => Some(Ending::Orphaned),
            };
            let Some(ending) = ended else { continue };
            let _ = epoll.ctl(libc::EPOLL_CTL_DEL, raw, 0);
            let Some((conn, work)) = conns.remove(&raw) else {
                continue;
            };
            let job = match ending {
                Ending::Done => continue,
                Ending::Orphaned => Job::Orphaned(work),
                Ending::Asked => Job::Asked(work, conn),
            };
            let _ = jobs.send(job);
        }
    }
    drop(jobs);
    let _ = cleaner.join();
    Ok(())
}

enum Ending {
    Done,
    Orphaned,
    Asked,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentinel::Sentinel;
    use std::time::{Duration, Instant};

    fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A connection to the service over `channel`, as the program hands one to a box's host.
    fn connect(channel: &OwnedFd) -> OwnedFd {
        let (ours, theirs) = airlock_jail::net::seqpacket_pair().unwrap();
        airlock_jail::net::send_with_fds(channel.as_raw_fd(), b"box", &[theirs.as_raw_fd()])
            .unwrap();
        ours
    }

    #[test]
    fn the_service_cleans_up_after_a_host_that_ends_without_done_and_only_then() {
        // Directories stand in for a box's cgroups: an empty one is removed like a cgroup whose
        // processes are gone.
        let base =
            std::env::temp_dir().join(format!("airlock-sentinel-svc-{}", std::process::id()));
        let dirs: Vec<_> = ["orphaned", "done", "asked"]
            .iter()
            .map(|n| base.join(n))
            .collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let (program, service_end) = airlock_jail::net::seqpacket_pair().unwrap();
        let service = std::thread::spawn(move || serve(&service_end));

        // A host that registers and dies (its end of the connection closes): its directory
        // goes.
        let orphaned = connect(&program);
        let send = |c: &OwnedFd, m: &str| {
            airlock_jail::net::send_with_fds(c.as_raw_fd(), m.as_bytes(), &[]).unwrap()
        };
        send(&orphaned, HELLO);
        let mut buf = [0u8; 16];
        let (n, _) = airlock_jail::net::recv_with_fds(orphaned.as_raw_fd(), &mut buf, 1).unwrap();
        assert_eq!(&buf[..n], OK.as_bytes());
        send(&orphaned, &format!("cgroup {}", dirs[0].display()));
        // A host that ends normally: its directory is its own business.
        let done = Sentinel::join(connect(&program)).unwrap();
        assert!(done.is_shared());
        done.register_cgroup(&dirs[1]);
        done.finish();
        // A host that drops its sentinel without finishing: cleaned up before the drop returns.
        let asked = Sentinel::join(connect(&program)).unwrap();
        asked.register_cgroup(&dirs[2]);
        drop(asked);
        assert!(!dirs[2].exists(), "cleaned up before the drop returned");
        assert!(dirs[0].exists(), "the first host still lives");
        drop(orphaned);
        wait_for("the dead host's directory to go", || !dirs[0].exists());
        assert!(dirs[1].exists(), "done: nothing is removed");

        // The program gone and no box left: the service ends.
        drop(program);
        wait_for("the service to end", || service.is_finished());
        service.join().unwrap().unwrap();
        std::fs::remove_dir(&dirs[1]).unwrap();
        std::fs::remove_dir(&base).unwrap();
    }

    #[test]
    fn a_hello_nobody_answers_fails_and_the_box_forks_its_own() {
        // The service's end exists but nobody reads it: join gives up.
        let (ours, _silent) = airlock_jail::net::seqpacket_pair().unwrap();
        let started = Instant::now();
        assert!(Sentinel::join(ours).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        // A service that is gone: refused at once, and for_box falls back to a fork.
        let (ours, gone) = airlock_jail::net::seqpacket_pair().unwrap();
        drop(gone);
        let own = Sentinel::for_box(Some(ours)).unwrap();
        assert!(!own.is_shared());
        own.finish();
    }
}
