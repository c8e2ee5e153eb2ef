//! Terminal handling: when airlock's stdin is a terminal, the box gets its own pseudo-terminal
//! (so it can never write into, or inject input into, the caller's terminal) and the caller's
//! terminal is put in raw mode while the box runs.

use std::io;

/// Whether `fd` is a terminal.
pub fn is_tty(fd: libc::c_int) -> bool {
    // SAFETY: isatty with an integer argument.
    unsafe { libc::isatty(fd) == 1 }
}

/// A new pseudo-terminal pair: (master, slave), both close-on-exec.
pub fn open_pty() -> io::Result<(libc::c_int, libc::c_int)> {
    // SAFETY: posix_openpt with flags; result checked.
    let master = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if master == -1 {
        return Err(io::Error::last_os_error());
    }
    let fail = |master: libc::c_int| {
        let e = io::Error::last_os_error();
        // SAFETY: closing our own master fd.
        unsafe { libc::close(master) };
        Err(e)
    };
    // SAFETY: master is a valid ptmx fd.
    if unsafe { libc::grantpt(master) } == -1 || unsafe { libc::unlockpt(master) } == -1 {
        return fail(master);
    }
    // TIOCGPTPEER opens the slave through the master: no path lookup, no race.
    // SAFETY: ioctl on the master with integer flags.
    let slave = unsafe {
        libc::ioctl(
            master,
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    };
    if slave == -1 {
        return fail(master);
    }
    Ok((master, slave))
}

/// Copies the window size of terminal `from` to the pty `to`.
pub fn copy_winsize(from: libc::c_int, to: libc::c_int) {
    // SAFETY: winsize is plain data.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer for TIOCGWINSZ; then a valid in-pointer for TIOCSWINSZ.
    if unsafe { libc::ioctl(from, libc::TIOCGWINSZ, &mut ws) } == 0 {
        // SAFETY: as above.
        unsafe { libc::ioctl(to, libc::TIOCSWINSZ, &ws) };
    }
}

/// Raw mode on a terminal until dropped.
pub struct RawMode {
    fd: libc::c_int,
    saved: libc::termios,
}

impl RawMode {
    pub fn enable(fd: libc::c_int) -> io::Result<RawMode> {
        // SAFETY: termios is plain data for tcgetattr to fill.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: valid fd and out-pointer.
        if unsafe { libc::tcgetattr(fd, &mut saved) } == -1 {
            return Err(io::Error::last_os_error());
        }
        let mut raw = saved;
        // SAFETY: raw is a valid termios.
        unsafe { libc::cfmakeraw(&mut raw) };
        // SAFETY: valid fd and termios.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restoring the attributes read in enable().
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}
