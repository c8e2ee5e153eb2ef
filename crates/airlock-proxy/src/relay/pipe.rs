//! The kernel pipe a bulk direction of a tunnel splices through (socket → pipe → socket, the
//! bytes never enter user space), and the bound on how many exist at once.
//!
//! Each pipe is two descriptors and counts against the user's pipe allowance
//! (`/proc/sys/fs/pipe-user-pages-soft`): only directions that move bulk data get one, at most
//! [`MAX_PIPES`] exist in the process, and each is closed when its direction ends or idles.

use super::sys;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The capacity asked for: large enough that one splice moves a burst of a loopback transfer
/// (fewer system calls and wakeups per byte).
pub(super) const PIPE_BYTES: usize = 1024 * 1024;
/// Below this the kernel's answer is not worth a pipe (the copying relay is as good).
const MIN_PIPE_BYTES: usize = 64 * 1024;
/// Pipes that may exist at once in the process, for all tunnels of all proxies: 128
/// descriptors and at most 32 MiB of pipe capacity (half the default per-user soft limit, so
/// the proxy never pushes other pipes of the same user down to the kernel's minimum size).
pub(super) const MAX_PIPES: usize = 32;

/// The process-wide bound on pipes.
pub(super) static PIPES: PipePool = PipePool::new(MAX_PIPES);

/// Counts the pipes in use against a maximum.
pub(super) struct PipePool {
    in_use: AtomicUsize,
    max: usize,
}

impl PipePool {
    pub(super) const fn new(max: usize) -> PipePool {
        PipePool {
            in_use: AtomicUsize::new(0),
            max,
        }
    }

    /// A new pipe of (up to) `bytes` capacity, or `None` if the pool is at its maximum, the
    /// kernel refused a pipe of useful size, or the process would die of `SIGPIPE` when a
    /// splice meets a closed peer: the caller then copies instead.
    pub(super) fn take(&self, bytes: usize) -> Option<Pipe<'_>> {
        if sys::sigpipe_is_fatal() {
            return None;
        }
        self.in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()?;
        let lease = Lease(self);
        let (read, write) = sys::pipe().ok()?;
        let capacity = grow(write.as_fd(), bytes).ok()?;
        (capacity >= MIN_PIPE_BYTES).then_some(Pipe {
            read,
            write,
            capacity,
            len: 0,
            _lease: lease,
        })
    }

    /// Pipes currently in use.
    #[cfg(test)]
    pub(super) fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }
}

/// One pipe counted in a pool until dropped.
struct Lease<'a>(&'a PipePool);

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.0.in_use.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Asks for `bytes`, halving on refusal (`EPERM` beyond `pipe-max-size` or the user's
/// allowance) down to [`MIN_PIPE_BYTES`]; returns the capacity the pipe ends up with.
fn grow(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    let mut ask = bytes;
    while ask >= MIN_PIPE_BYTES {
        if let Ok(granted) = sys::set_pipe_size(fd, ask) {
            return Ok(granted);
        }
        ask /= 2;
    }
    sys::pipe_size(fd)
}

/// A pipe and the bytes it holds. Only ever filled when empty, so a failed splice into it
/// always means the socket had nothing to give (never "pipe full").
pub(super) struct Pipe<'a> {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
    len: usize,
    _lease: Lease<'a>,
}

impl Pipe<'_> {
    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes in the pipe, not yet passed on.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Splices up to `max` bytes from the socket `from` into the (empty) pipe. `Ok(0)` is end
    /// of file; `WouldBlock` means the socket has no data.
    pub(super) fn fill_from(&mut self, from: BorrowedFd<'_>, max: usize) -> io::Result<usize> {
        debug_assert_eq!(self.len, 0, "a pipe is only filled when empty");
        let n = sys::splice(from, self.write.as_fd(), max.min(self.capacity))?;
        self.len += n;
        Ok(n)
    }

    /// Splices what the pipe holds into the socket `to`; returns how much went.
    /// `WouldBlock` means the socket's send buffer is full.
    pub(super) fn drain_to(&mut self, to: BorrowedFd<'_>) -> io::Result<usize> {
        let n = sys::splice(self.read.as_fd(), to, self.len)?;
        self.len -= n.min(self.len);
        Ok(n)
    }

    /// Reads what the pipe holds into `buf` (for a destination that cannot take a splice).
    pub(super) fn read_into(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = self.len.min(buf.len());
        let n = sys::read(self.read.as_fd(), &mut buf[..len])?;
        self.len -= n.min(self.len);
        Ok(n)
    }
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
