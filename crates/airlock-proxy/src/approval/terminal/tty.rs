//! The controlling terminal of the airlock process, as the approver uses it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `/dev/tty` of this process (its controlling terminal), never the box's.
pub(super) struct Tty(File);

/// What waiting for a key gave.
pub(super) enum Waited {
    Bytes(Vec<u8>),
    /// The deadline passed.
    Deadline,
    /// `stop` became readable (airlock is ending).
    Stopped,
    /// The terminal went away (hung up, closed).
    Gone,
}

impl Tty {
    /// Opens the controlling terminal; fails (ENXIO) when the process has none.
    pub(super) fn open() -> std::io::Result<Tty> {
        // SAFETY: open with a static C string and flags; the result is checked.
        let fd = unsafe {
            libc::open(
                c"/dev/tty".as_ptr(),
                libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
            )
        };
        if fd == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: open just returned this descriptor; nothing else owns it.
        Ok(Tty(File::from(unsafe { OwnedFd::from_raw_fd(fd) })))
    }

    pub(super) fn write(&self, text: &str) {
        let mut f = &self.0;
        let _ = f.write_all(text.as_bytes()).and_then(|_| f.flush());
    }

    /// Throws away what was typed before the question (keys meant for the box must not answer
    /// it).
    pub(super) fn discard_input(&self) {
        // SAFETY: tcflush on our own terminal descriptor.
        unsafe { libc::tcflush(self.0.as_raw_fd(), libc::TCIFLUSH) };
    }

    /// Puts the terminal in a mode that delivers each key at once, unechoed, with Ctrl-C as a
    /// key (not a signal to airlock) until the guard is dropped.
    pub(super) fn one_key_mode(&self) -> Option<KeyMode<'_>> {
        let fd = self.0.as_raw_fd();
        // SAFETY: termios is plain data, filled by tcgetattr.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointer.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut t = saved;
        t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: valid in-pointer to a termios derived from the current one.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } != 0 {
            return None;
        }
        Some(KeyMode { tty: self, saved })
    }

    /// Waits until `deadline` for keys, or for `stop`.
    pub(super) fn wait(&self, stop: &OwnedFd, deadline: Instant) -> Waited {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Waited::Deadline;
            }
            let ms = left.as_millis().min(i32::MAX as u128) as i32 + 1;
            let mut fds = [
                libc::pollfd {
                    fd: self.0.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: a valid array of two pollfd.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Waited::Gone;
            }
            if fds[1].revents != 0 {
                return Waited::Stopped;
            }
            if fds[0].revents & libc::POLLIN != 0 {
                let mut buf = [0u8; 64];
                return match (&self.0).read(&mut buf) {
                    Ok(0) | Err(_) => Waited::Gone,
                    Ok(n) => Waited::Bytes(buf[..n].to_vec()),
                };
            }
            if fds[0].revents != 0 {
                return Waited::Gone;
            }
        }
    }
}

/// The terminal's mode before [`Tty::one_key_mode`], restored on drop.
pub(super) struct KeyMode<'a> {
    tty: &'a Tty,
    saved: libc::termios,
}

impl Drop for KeyMode<'_> {
    fn drop(&mut self) {
        // SAFETY: restoring the termios tcgetattr gave for our own descriptor.
        unsafe { libc::tcsetattr(self.tty.0.as_raw_fd(), libc::TCSANOW, &self.saved) };
    }
}

/// Seconds from now until `deadline_ms` (milliseconds since the Unix epoch), rounded up.
pub(super) fn until(deadline_ms: u128) -> (Instant, u64) {
    let now_ms = super::super::grants::epoch_ms(std::time::SystemTime::now());
    let left = Duration::from_millis(deadline_ms.saturating_sub(now_ms) as u64);
    (
        Instant::now() + left,
        left.as_millis().div_ceil(1000) as u64,
    )
}
