//! The cleanup sentinel: a tiny process forked before the box that outlives airlock if airlock is
//! killed (even with SIGKILL) and then removes what the run left on the host: the box's cgroup
//! directories (after killing their processes) and empty placeholders. When airlock ends normally
//! it cleans up itself and tells the sentinel to exit.
//!
//! Protocol on the pipe, one line each: `cgroup <dir>`, `placeholder-dir <path>`,
//! `placeholder-file <path>`, and `done` (normal end: nothing to do).

use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The supervisor's end of the sentinel's pipe.
pub struct Sentinel {
    pipe: Option<OwnedFd>,
    pid: libc::pid_t,
}

impl Sentinel {
    /// Forks the sentinel. Call from the single-threaded supervisor before anything is created.
    pub fn start() -> io::Result<Sentinel> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array for pipe2.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
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
        let pipe = unsafe { OwnedFd::from_raw_fd(fds[1]) };
        Ok(Sentinel {
            pipe: Some(pipe),
            pid,
        })
    }

    /// Registers something to clean up if airlock dies.
    pub fn register(&self, kind: &str, path: &Path) {
        if let Some(p) = &self.pipe {
            let line = format!("{kind} {}\n", path.display());
            let _ = airlock_jail::write_all(p.as_raw_fd(), line.as_bytes());
        }
    }

    /// Normal end: the supervisor cleaned up; the sentinel exits without doing anything.
    pub fn finish(mut self) {
        if let Some(p) = self.pipe.take() {
            let _ = airlock_jail::write_all(p.as_raw_fd(), b"done\n");
        }
        self.reap();
    }

    fn reap(&self) {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if self.pipe.take().is_some() {
            // Dropping without finish: the sentinel sees EOF and cleans up.
            self.reap();
        }
    }
}

fn sentinel_main(fd: libc::c_int) -> ! {
    // Own session: a Ctrl-C or a hang-up meant for airlock's terminal does not reach it.
    // SAFETY: plain syscalls in the forked child.
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
        // Keep nothing else open (so no pipe of the box's output waits on the sentinel).
        libc::syscall(libc::SYS_close_range, 0u32, (fd - 1).max(0) as u32, 0u32);
        if fd > 0 {
            libc::syscall(libc::SYS_close_range, (fd + 1) as u32, u32::MAX, 0u32);
        }
    }
    // SAFETY: fd is the read end we own in this process.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    if !text.lines().any(|l| l == "done") {
        cleanup(&text);
    }
    // SAFETY: _exit in the forked child.
    unsafe { libc::_exit(0) }
}

fn cleanup(text: &str) {
    let mut cgroups = Vec::new();
    let mut placeholders = Vec::new();
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("cgroup", p)) => cgroups.push(PathBuf::from(p)),
            Some(("placeholder-dir", p)) => placeholders.push((PathBuf::from(p), true)),
            Some(("placeholder-file", p)) => placeholders.push((PathBuf::from(p), false)),
            _ => {}
        }
    }
    // The box's init died with airlock (PDEATHSIG), taking its pid namespace along; kill any
    // straggler still in the cgroup, then remove the directories.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    for dir in &cgroups {
        while std::time::Instant::now() < deadline {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs
                .lines()
                .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
            {
                // SAFETY: kill with integer arguments; these pids are in the box's cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    for (p, dir) in placeholders.iter().rev() {
        crate::placeholders::remove_one(p, *dir);
    }
}
