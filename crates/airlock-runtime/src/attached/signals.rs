//! Signals airlock forwards to the box.

use std::io;

/// Blocks the signals airlock forwards (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH) (read through a signalfd) and restores the mask on drop.
pub struct SignalGuard {
    pub fd: libc::c_int,
    old: libc::sigset_t,
}

const FORWARD: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGWINCH,
];

impl SignalGuard {
    pub fn block() -> io::Result<SignalGuard> {
        // SAFETY: sigset_t values are plain data initialised by sigemptyset.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set is valid.
        unsafe { libc::sigemptyset(&mut set) };
        for &s in FORWARD {
            // SAFETY: set is initialised.
            unsafe { libc::sigaddset(&mut set, s) };
        }
        // SAFETY: valid sigsets.
        unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old) };
        // SAFETY: set is valid; new signalfd.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd == -1 {
            let e = io::Error::last_os_error();
            // SAFETY: restoring the previous mask.
            unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
            return Err(e);
        }
        Ok(SignalGuard { fd, old })
    }

    pub fn read(&self) -> Option<libc::c_int> {
        // SAFETY: signalfd_siginfo is plain data.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: reading into a buffer of the right size.
        let n = unsafe {
            libc::read(
                self.fd,
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        (n as usize == size).then_some(info.ssi_signo as libc::c_int)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // SAFETY: closing our signalfd and restoring the saved mask.
        unsafe {
            libc::close(self.fd);
            libc::sigprocmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}
