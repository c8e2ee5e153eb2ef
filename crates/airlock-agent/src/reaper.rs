//! PID 1 duties: SIGCHLD arrives on a signalfd (it is blocked for the agent), and every child —
//! ours or an orphan re-parented to the agent — is reaped with `waitpid(-1, WNOHANG)`.

use crate::sys::{self, cvt};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub(crate) struct Reaper {
    fd: OwnedFd,
    old_mask: libc::sigset_t,
}

impl Reaper {
    /// Blocks SIGCHLD, opens the signalfd and makes the agent the reaper of orphans in its tree
    /// (a no-op as PID 1, needed when the agent runs below another init, as in tests).
    pub(crate) fn new() -> io::Result<Reaper> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set and old_mask are valid sigset_t values.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
        }
        // SAFETY: valid sigset pointers.
        cvt(unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old_mask) })?;
        // SAFETY: set is a valid sigset; -1 asks for a new fd.
        let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
        // SAFETY: fd was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: prctl with integer arguments.
        cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })?;
        Ok(Reaper { fd, old_mask })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Drains the signalfd, then reaps every exited child: `(pid, wait status)`.
    pub(crate) fn reap(&self) -> Vec<(i32, i32)> {
        let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
        while matches!(sys::read(&self.fd, &mut info), Ok(n) if n > 0) {}
        reap_all()
    }
}

/// Reaps every exited child without blocking.
pub(crate) fn reap_all() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return out;
        }
        out.push((pid, status));
    }
}

/// Waits for one child (blocking).
pub(crate) fn wait_for(pid: i32) -> Option<i32> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Some(status);
        }
        if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut()) };
    }
}
