//! Turns at the terminal between the box's relay (its output to airlock's stdout/stderr, and
//! airlock's stdin to the box) and the approver's questions.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Shared by the supervisor that relays the box's terminal and the terminal approver. The
/// relay takes a turn for each chunk it moves ([`TerminalFloor::relay_turn`]); the approver
/// holds the floor for a whole question. While it does, the relay polls neither airlock's
/// stdin nor the box's output (the box's writes wait in its pty or pipe), and wakes on
/// [`TerminalFloor::wake_fd`] when the question is over.
pub struct TerminalFloor {
    turn: Mutex<()>,
    asking: AtomicBool,
    wake_r: OwnedFd,
    wake_w: OwnedFd,
}

/// The relay's turn: held while it moves one chunk.
pub struct RelayTurn<'a>(#[allow(dead_code)] MutexGuard<'a, ()>);

/// The approver's turn: held for one question.
pub(super) struct QuestionTurn<'a> {
    floor: &'a TerminalFloor,
    _turn: MutexGuard<'a, ()>,
}

impl TerminalFloor {
    pub fn new() -> std::io::Result<TerminalFloor> {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe2.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 just made these two descriptors, owned by nothing else.
        let (wake_r, wake_w) = unsafe {
            use std::os::fd::FromRawFd;
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        };
        Ok(TerminalFloor {
            turn: Mutex::new(()),
            asking: AtomicBool::new(false),
            wake_r,
            wake_w,
        })
    }

    /// Whether a question is up (the relay leaves the terminal alone until it is over).
    pub fn asking(&self) -> bool {
        self.asking.load(Ordering::SeqCst)
    }

    /// The relay's turn to move a chunk, or `None` while a question is up.
    pub fn relay_turn(&self) -> Option<RelayTurn<'_>> {
        match self.turn.try_lock() {
            Ok(g) => Some(RelayTurn(g)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(RelayTurn(p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Readable when a question ended; the relay polls it while [`TerminalFloor::asking`] and
    /// then calls [`TerminalFloor::drain_wake`].
    pub fn wake_fd(&self) -> RawFd {
        self.wake_r.as_raw_fd()
    }

    /// Empties the wake pipe.
    pub fn drain_wake(&self) {
        let mut buf = [0u8; 64];
        // SAFETY: reading into our own buffer from our own non-blocking pipe.
        while unsafe { libc::read(self.wake_r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0
        {
        }
    }

    /// Waits for the relay to finish its chunk, then holds the terminal for one question.
    pub(super) fn question(&self) -> QuestionTurn<'_> {
        let turn = self
            .turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.asking.store(true, Ordering::SeqCst);
        QuestionTurn {
            floor: self,
            _turn: turn,
        }
    }
}

impl Drop for QuestionTurn<'_> {
    fn drop(&mut self) {
        self.floor.asking.store(false, Ordering::SeqCst);
        // SAFETY: writing one byte from a static buffer to our own non-blocking pipe (a full
        // pipe already wakes the relay).
        unsafe { libc::write(self.floor.wake_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
}

#[cfg(test)]
#[path = "floor_tests.rs"]
mod tests;
