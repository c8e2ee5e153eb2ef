//! Pseudo-terminals: the agent keeps the master; the child opens the slave as its controlling
//! terminal (see `spawn`).

use crate::sys::cvt;
use airlock_protocol::TtySize;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A new pty master (close-on-exec) and the path of its slave.
pub(crate) fn open(size: TtySize) -> io::Result<(OwnedFd, CString)> {
    // SAFETY: posix_openpt takes flags and returns a new fd or -1.
    let fd = cvt(unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    let master = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: grantpt/unlockpt on a valid pty master fd.
    cvt(unsafe { libc::grantpt(master.as_raw_fd()) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::unlockpt(master.as_raw_fd()) })?;
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: name is a writable buffer of the given length; ptsname_r NUL-terminates it.
    let rc = unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: ptsname_r succeeded, so name holds a NUL-terminated string.
    let path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_owned();
    resize(&master, size)?;
    Ok((master, path))
}

/// Sets the terminal size (the foreground process group gets SIGWINCH).
pub(crate) fn resize(master: &impl AsRawFd, size: TtySize) -> io::Result<()> {
    let ws = libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the valid pointer.
    cvt(unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) })?;
    Ok(())
}
