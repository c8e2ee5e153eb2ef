//! The relay's system calls — `pipe2`, `fcntl(F_SETPIPE_SZ/F_GETPIPE_SZ)`, `splice`, `read`
//! and `shutdown` — each a thin wrapper that takes borrowed descriptors (so none can be used
//! after it was closed) and turns the return code into an `io::Result`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Turns a libc return value (negative = failure, reason in `errno`) into a result.
fn check(ret: libc::ssize_t) -> io::Result<usize> {
    usize::try_from(ret).map_err(|_| io::Error::last_os_error())
}

/// A new pipe, both ends non-blocking and close-on-exec: `(read end, write end)`.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    check(
        // SAFETY: `fds` is a valid, writable array of two ints, as pipe2 requires.
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) }
            as libc::ssize_t,
    )?;
    // SAFETY: pipe2 succeeded, so both are fresh descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Asks for a pipe of `bytes` capacity; returns the capacity the kernel granted (it rounds
/// up to a power of two pages).
pub(super) fn set_pipe_size(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    let bytes =
        libc::c_int::try_from(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: F_SETPIPE_SZ takes an int and touches no memory of ours; `fd` is open (borrowed).
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) } as libc::ssize_t)
}

/// The pipe's capacity in bytes.
pub(super) fn pipe_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    // SAFETY: F_GETPIPE_SZ takes no argument and touches no memory of ours; `fd` is open.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) } as libc::ssize_t)
}

/// Moves up to `len` bytes from `from` to `to` without copying them through user space; one of
/// the two must be a pipe. Never blocks on the pipe (`SPLICE_F_NONBLOCK`); the sockets the relay
/// passes are non-blocking themselves. `Ok(0)` means end of file on `from`.
pub(super) fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
    // SAFETY: null offsets mean "the descriptors' own positions" (required for pipes and
    // sockets); splice touches no memory of ours; both descriptors are open (borrowed).
    check(unsafe {
        libc::splice(
            from.as_raw_fd(),
            std::ptr::null_mut(),
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            flags,
        )
    })
}

/// `read(2)` into `buf`.
pub(super) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call;
    // `fd` is open (borrowed).
    check(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// Half-closes a socket: the peer reads end of file; reading from it continues.
pub(super) fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: shutdown touches no memory of ours; `fd` is open (borrowed).
    check(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) } as libc::ssize_t).map(drop)
}

/// Sets the socket's TCP congestion control algorithm (`TCP_CONGESTION`) by name.
pub(super) fn set_congestion_control(fd: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    let len = libc::socklen_t::try_from(name.len())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `name` is valid for reads of `len` bytes for the duration of the call (the
    // kernel copies it); `fd` is open (borrowed).
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            len,
        )
    };
    check(ret as libc::ssize_t).map(drop)
}

/// Whether `SIGPIPE` would kill the process (default disposition). A splice into a socket
/// whose peer is gone raises it (unlike `send`, splice cannot pass `MSG_NOSIGNAL`); Rust
/// programs ignore it from startup, but a host process embedding the proxy may not.
pub(super) fn sigpipe_is_fatal() -> bool {
    // SAFETY: an all-zero sigaction is a valid value to be overwritten by the kernel.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; `current` is valid for writes.
    let ret = unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current) };
    ret != 0 || current.sa_sigaction == libc::SIG_DFL
}
