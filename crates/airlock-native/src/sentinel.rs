//! The cleanup sentinel: a tiny process forked before the box that outlives airlock if airlock is
//! killed (even with SIGKILL) and then removes what the run left on the host: the box's cgroup
//! directories (after killing their processes) and empty placeholders. When airlock ends normally
//! it cleans up itself and tells the sentinel to exit.
//!
//! Protocol on a unix SEQPACKET socket, one message each: `cgroup <dir>`, `placeholder <record>`
//! carrying the descriptors of the placeholder's directory and of the placeholder itself
//! (SCM_RIGHTS; see [`MadeEntry::record`]), and `done` (normal end: nothing to do). A placeholder
//! is removed through those descriptors, as the supervisor does, never by its path: the box's
//! workspace may have been rearranged by another box meanwhile.
//!
//! A box's host under a server does not fork a sentinel of its own: it joins the server's one
//! shared sentinel ([`crate::sentinel_service`]) over a connection that speaks the same
//! messages, plus `hello` (answered `ok`) and `clean` (clean up now, answered `cleaned`).

use crate::placeholders::{MadeEntry, Placeholder};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The longest message: a cgroup directory's path.
const MAX_MESSAGE: usize = libc::PATH_MAX as usize + 64;
/// How long the sentinel keeps trying to empty and remove the box's cgroups.
const CLEANUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The first line of a message that registers several placeholders.
const BATCH_HEADER: &str = "placeholders";

/// How long a box's host waits for the shared sentinel to answer its `hello`.
const JOIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The supervisor's end of the sentinel's socket.
pub struct Sentinel {
    channel: Option<OwnedFd>,
    /// The sentinel this process forked, or `None`: a connection to a shared one.
    pid: Option<libc::pid_t>,
}

impl Sentinel {
    /// Forks the sentinel. Call from the single-threaded supervisor before anything is created.
    pub fn start() -> io::Result<Sentinel> {
        reap_finished();
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array for socketpair to fill.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } == -1
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the supervisor is single-threaded here; the child only reads, then exits.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            let e = io::Error::last_os_error();
            for fd in fds {
                // SAFETY: closing fds we just created.
                unsafe { libc::close(fd) };
            }
            return Err(e);
        }
        if pid == 0 {
            sentinel_main(fds[0]);
        }
        // SAFETY: fds[0] is ours and no longer needed in the parent.
        unsafe { libc::close(fds[0]) };
        // SAFETY: fds[1] is a freshly created descriptor we own exclusively.
        let channel = unsafe { OwnedFd::from_raw_fd(fds[1]) };
        Ok(Sentinel {
            channel: Some(channel),
            pid: Some(pid),
        })
    }

    /// Joins a shared sentinel over `conn` (a SEQPACKET connection its service holds the other
    /// end of): says `hello` and waits for `ok`. Fails if the service does not answer in time
    /// (the caller then forks a sentinel of its own).
    pub fn join(conn: OwnedFd) -> io::Result<Sentinel> {
        airlock_jail::net::send_with_fds(conn.as_raw_fd(), HELLO.as_bytes(), &[])?;
        let reply = recv_within(&conn, JOIN_TIMEOUT)?;
        if reply != OK.as_bytes() {
            return Err(io::Error::other(format!(
                "the shared sentinel answered {:?} to hello",
                String::from_utf8_lossy(&reply)
            )));
        }
        Ok(Sentinel {
            channel: Some(conn),
            pid: None,
        })
    }

    /// A sentinel for one box: the shared one over `shared` when given and it answers, else one
    /// forked here.
    pub fn for_box(shared: Option<OwnedFd>) -> io::Result<Sentinel> {
        if let Some(conn) = shared {
            match Sentinel::join(conn) {
                Ok(s) => return Ok(s),
                Err(e) => eprintln!(
                    "airlock: the shared cleanup sentinel did not answer ({e}); this box has one of its own"
                ),
            }
        }
        Sentinel::start()
    }

    /// Whether this is a connection to a shared sentinel (not one of our own).
    pub fn is_shared(&self) -> bool {
        self.pid.is_none()
    }

    /// Registers a cgroup directory to remove if airlock dies.
    pub fn register_cgroup(&self, dir: &Path) {
        self.send(&format!("cgroup {}", dir.display()), &[]);
    }

    /// Registers placeholders to remove if airlock dies, handing over their directories.
    ///
    /// They go in as few messages as the descriptor and size limits allow (each message wakes
    /// the sentinel once): `placeholders\n<record>\n<record>…`, two descriptors per record.
    pub fn register_placeholders(&self, made: &[Placeholder]) {
        let mut batch = String::from(BATCH_HEADER);
        let mut fds: Vec<libc::c_int> = Vec::new();
        for p in made {
            let record = p.entry.record();
            if record.contains('\n') {
                // Never split across lines: this one goes alone, in the one-record form.
                self.send(&format!("placeholder {record}"), &p.entry.fds());
                continue;
            }
            let full = batch.len() + 1 + record.len() > MAX_MESSAGE
                || fds.len() + 2 > airlock_jail::net::MAX_FDS;
            if full && !fds.is_empty() {
                self.send(&batch, &fds);
                batch.truncate(BATCH_HEADER.len());
                fds.clear();
            }
            batch.push('\n');
            batch.push_str(&record);
            fds.extend(p.entry.fds());
        }
        if !fds.is_empty() {
            self.send(&batch, &fds);
        }
    }

    fn send(&self, message: &str, fds: &[libc::c_int]) {
        if let Some(p) = &self.channel {
            let _ = airlock_jail::net::send_with_fds(p.as_raw_fd(), message.as_bytes(), fds);
        }
    }

    /// Normal end: the supervisor cleaned up; the sentinel exits without doing anything. Its
    /// exit is not waited for (a forked copy of airlock takes ~0.2 ms to tear down, at the end
    /// of every `airlock run`): it is reaped by the next start or finish, or, when this process
    /// ends first, by whoever inherits it.
    pub fn finish(mut self) {
        self.send("done", &[]);
        self.channel = None;
        if let Some(pid) = self.pid.take() {
            lock_unreaped().push(pid);
        }
        reap_finished();
    }

    fn reap(&self) {
        let Some(pid) = self.pid else { return };
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let Some(channel) = self.channel.take() else {
            return;
        };
        if self.pid.is_none() {
            // A shared sentinel outlives this connection: ask it to clean up now, and wait, as
            // for a sentinel of our own (an EOF would have it clean up later, unwaited).
            if airlock_jail::net::send_with_fds(channel.as_raw_fd(), CLEAN.as_bytes(), &[]).is_ok()
            {
                let _ = recv_within(&channel, CLEANUP_TIMEOUT + JOIN_TIMEOUT);
            }
            return;
        }
        // Dropping without finish: the sentinel sees EOF and cleans up.
        drop(channel);
        self.reap();
    }
}

/// Sentinels told `done` and not yet reaped.
static UNREAPED: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn lock_unreaped() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    UNREAPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reaps, without waiting, the sentinels that have exited since they were told `done`.
fn reap_finished() {
    lock_unreaped().retain(|&pid| {
        let mut status = 0;
        // SAFETY: a non-blocking wait for our own child; 0 while it still runs, -1 if it was
        // reaped by someone else already (then it is forgotten too).
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
    });
}

/// `hello`: a box's host joins a shared sentinel; answered with `ok`.
pub(crate) const HELLO: &str = "hello";
pub(crate) const OK: &str = "ok";
/// `clean`: clean up what this connection registered now; answered with `cleaned`.
pub(crate) const CLEAN: &str = "clean";
pub(crate) const CLEANED: &str = "cleaned";

/// One message from `conn` within `timeout`.
fn recv_within(conn: &OwnedFd, timeout: std::time::Duration) -> io::Result<Vec<u8>> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut pfd = libc::pollfd {
            fd: conn.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut pfd, 1, ms) } {
            1 => {}
            0 => return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time")),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
        }
        let mut buf = [0u8; 64];
        match airlock_jail::net::recv_with_fds(conn.as_raw_fd(), &mut buf, 1) {
            Ok((n, fds)) => {
                for fd in fds {
                    // SAFETY: a descriptor received over SCM_RIGHTS is new in this process.
                    drop(unsafe { OwnedFd::from_raw_fd(fd) });
                }
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
                return Ok(buf[..n].to_vec());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A session of its own, deaf to the signals meant for airlock's terminal and for airlock: a
/// Ctrl-C, a hang-up or a TERM does not end a sentinel before it has cleaned up.
pub(crate) fn detach() {
    // SAFETY: plain syscalls with integer arguments.
    unsafe {
        libc::setsid();
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

fn sentinel_main(fd: libc::c_int) -> ! {
    detach();
    // SAFETY: plain syscalls in the forked child.
    unsafe {
        // Keep nothing else open (so no pipe of the box's output waits on the sentinel).
        libc::syscall(libc::SYS_close_range, 0u32, (fd - 1).max(0) as u32, 0u32);
        if fd > 0 {
            libc::syscall(libc::SYS_close_range, (fd + 1) as u32, u32::MAX, 0u32);
        }
    }
    // SAFETY: fd is our end of the socket, owned by nobody else in this process.
    let channel = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut work = Work::default();
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        match airlock_jail::net::recv_with_fds(
            channel.as_raw_fd(),
            &mut buf,
            airlock_jail::net::MAX_FDS,
        ) {
            // End of file: airlock is gone (or closed its end after `done`).
            Ok((0, fds)) if fds.is_empty() => break,
            Ok((n, fds)) => {
                let fds = fds
                    .into_iter()
                    // SAFETY: a descriptor received over SCM_RIGHTS is new in this process.
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
                    .collect();
                if work.take(&buf[..n], fds) == Done::Yes {
                    // SAFETY: _exit in the forked child.
                    unsafe { libc::_exit(0) }
                }
            }
            // Interrupted, or a message too long for the buffer (dropped): keep listening.
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.raw_os_error().is_none() => {}
            Err(_) => break,
        }
    }
    work.clean_up();
    // SAFETY: _exit in the forked child.
    unsafe { libc::_exit(0) }
}

/// What the sentinel will clean up, as registered so far.
#[derive(Default)]
pub(crate) struct Work {
    cgroups: Vec<PathBuf>,
    placeholders: Vec<MadeEntry>,
}

#[derive(PartialEq, Eq)]
pub(crate) enum Done {
    Yes,
    No,
}

impl Work {
    /// Takes one message (and the descriptors it carried).
    pub(crate) fn take(&mut self, message: &[u8], fds: Vec<OwnedFd>) -> Done {
        let Ok(text) = std::str::from_utf8(message) else {
            return Done::No;
        };
        if text == "done" {
            return Done::Yes;
        }
        let mut fds = fds.into_iter();
        if let Some(records) = text.strip_prefix(BATCH_HEADER) {
            for record in records.split('\n').skip(1) {
                let (Some(parent), Some(pin)) = (fds.next(), fds.next()) else {
                    break;
                };
                if let Some(entry) = MadeEntry::from_record(record, parent, pin) {
                    self.placeholders.push(entry);
                }
            }
            return Done::No;
        }
        match (text.split_once(' '), fds.next(), fds.next()) {
            (Some(("cgroup", p)), None, None) => self.cgroups.push(PathBuf::from(p)),
            (Some(("placeholder", record)), Some(parent), Some(pin)) => {
                if let Some(entry) = MadeEntry::from_record(record, parent, pin) {
                    self.placeholders.push(entry);
                }
            }
            _ => {}
        }
        Done::No
    }

    /// Kills what is left in the cgroups and removes them, then the placeholders, deepest first.
    pub(crate) fn clean_up(&self) {
        // The box's init died with airlock (PDEATHSIG), taking its pid namespace along; kill any
        // straggler still in the cgroups, then remove the directories. A paused box is frozen,
        // and its processes act on SIGKILL only once thawed: every directory is thawed before
        // any is waited on (the freezer is registered last, and the pids directory, first, never
        // empties while the box is frozen). The directories are then retried together until all
        // are gone or the time is up; nothing waits for the sentinel, so it may take its time.
        for dir in &self.cgroups {
            for (file, thawed) in [("freezer.state", "THAWED"), ("cgroup.freeze", "0")] {
                if dir.join(file).exists() {
                    let _ = std::fs::write(dir.join(file), thawed);
                }
            }
        }
        let deadline = std::time::Instant::now() + CLEANUP_TIMEOUT;
        let mut left: Vec<&PathBuf> = self.cgroups.iter().collect();
        while !left.is_empty() {
            for dir in &left {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs
                    .lines()
                    .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
                {
                    // SAFETY: kill with integer arguments; these pids are in the box's cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            left.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
            if left.is_empty() || std::time::Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for entry in self.placeholders.iter().rev() {
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Sentinel;
    use std::time::{Duration, Instant};

    #[test]
    fn a_finished_sentinel_is_not_waited_for_and_never_left_a_zombie() {
        let first = Sentinel::start().unwrap();
        let pid = first.pid.unwrap();
        first.finish();
        // It exits on its own once told `done`; a later start (or finish) reaps it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{pid}")).exists() {
            assert!(
                Instant::now() < deadline,
                "the finished sentinel {pid} was never reaped"
            );
            std::thread::sleep(Duration::from_millis(5));
            Sentinel::start().unwrap().finish();
        }
    }
}
