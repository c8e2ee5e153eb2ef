//! Thin wrappers over the raw syscalls the agent makes: return codes become `io::Result`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Turns a `-1`-on-error return code into an `io::Result`.
pub(crate) fn cvt<T: Copy + PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A pipe, both ends close-on-exec: (read, write).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Makes `fd` non-blocking.
pub(crate) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL on an fd has no memory effects.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL with integer flags.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// Marks `fd` close-on-exec.
pub(crate) fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_SETFD with an integer flag.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) })?;
    Ok(())
}

/// One `read(2)`, retried on EINTR.
pub(crate) fn read(fd: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        match cvt(n) {
            Ok(n) => return Ok(n.unsigned_abs()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `write(2)`, retried on EINTR.
pub(crate) fn write(fd: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for reads of buf.len() bytes.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        match cvt(n) {
            Ok(n) => return Ok(n.unsigned_abs()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `send(2)` with MSG_NOSIGNAL (a closed peer is EPIPE, not SIGPIPE), retried on EINTR.
pub(crate) fn send(fd: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for reads of buf.len() bytes.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        match cvt(n) {
            Ok(n) => return Ok(n.unsigned_abs()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `poll(2)` over `fds`, EINTR counted as "nothing ready".
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    let n = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
    // SAFETY: fds points to fds.len() valid pollfd structs.
    match cvt(unsafe { libc::poll(fds.as_mut_ptr(), n, timeout_ms) }) {
        Ok(n) => Ok(n.unsigned_abs() as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Sends `signal` to the process group `pgid`; a group that is already gone is not an error.
pub(crate) fn kill_group(pgid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill with integer arguments; a negative pid names a process group.
    match cvt(unsafe { libc::kill(-pgid, signal) }) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Whether `e` means "try again later" on a non-blocking fd.
pub(crate) fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}
