//! The one place raw syscall results become typed errors, and small helpers for C strings.

use std::ffi::CString;
use std::io;

/// Turns a `-1 + errno` return into an `io::Error`.
pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Same as [`cvt`] for `syscall(2)`'s `c_long` return.
pub(crate) fn cvt_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A C string from a path or argument; interior NUL bytes are an error naming the value.
pub(crate) fn cstring(s: impl Into<Vec<u8>>) -> io::Result<CString> {
    CString::new(s).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{:?} contains a NUL byte",
                String::from_utf8_lossy(&e.into_vec())
            ),
        )
    })
}

/// Writes all of `buf` to `fd`, retrying on EINTR and short writes.
pub fn write_all(fd: libc::c_int, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is a valid readable slice of buf.len() bytes for the duration of the call.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// A pipe with both ends close-on-exec: (read, write).
pub(crate) fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two c_ints for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

/// Waits until every one of `fds` is readable (a pidfd: its process has ended) or `until`
/// passes; whether they all became readable. A signal does not cut the wait short; a descriptor
/// `poll` refuses ends it (`false`), so a caller that polls again in a loop should pause first.
pub fn wait_readable(fds: &[libc::c_int], until: std::time::Instant) -> bool {
    let mut waiting: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !waiting.is_empty() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        // Rounded up: a wait of 0 ms before the deadline would spin.
        let ms = libc::c_int::try_from(left.as_millis() + 1).unwrap_or(libc::c_int::MAX);
        let count = libc::nfds_t::try_from(waiting.len()).unwrap_or(libc::nfds_t::MAX);
        // SAFETY: `waiting` is a live array of `count` pollfds; the caller keeps the
        // descriptors open for the call.
        if unsafe { libc::poll(waiting.as_mut_ptr(), count, ms) } < 0
            && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
        {
            return false;
        }
        waiting.retain(|p| p.revents == 0);
    }
    true
}

/// Closes a file descriptor, ignoring errors (used on cleanup paths).
pub(crate) fn close(fd: libc::c_int) {
    if fd >= 0 {
        // SAFETY: closing an fd we own; a stale fd only yields EBADF, which is ignored.
        unsafe { libc::close(fd) };
    }
}
