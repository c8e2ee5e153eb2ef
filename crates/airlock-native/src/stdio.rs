//! The box's standard input and output, as the supervisor sets them up.

use crate::{RunError, RunOptions, StdinMode};
use airlock_jail::spawn::StdioFds;
use airlock_runtime::attached::tty::{copy_winsize, is_tty, open_pty, RawMode};
use std::io;

/// The box's stdio: a pty, or pipes for stdout/stderr plus airlock's stdin.
pub(crate) struct BoxIo {
    pub(crate) tty: Option<(libc::c_int, libc::c_int, RawMode)>,
    stdin: libc::c_int,
    pub(crate) out: [libc::c_int; 2],
    child_out: [libc::c_int; 2],
    own_stdin: bool,
}

impl BoxIo {
    pub(crate) fn new(opts: &RunOptions) -> Result<BoxIo, RunError> {
        if opts.stdin == StdinMode::Auto && is_tty(0) {
            let (master, slave) = open_pty().map_err(RunError::Stdio)?;
            copy_winsize(0, master);
            let raw = RawMode::enable(0).map_err(RunError::Stdio)?;
            return Ok(BoxIo {
                tty: Some((master, slave, raw)),
                stdin: slave,
                out: [master, -1],
                child_out: [slave, slave],
                own_stdin: false,
            });
        }
        let (stdin, own_stdin) = if opts.stdin == StdinMode::Null {
            // SAFETY: opening /dev/null with a static C string.
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd == -1 {
                return Err(RunError::Stdio(io::Error::last_os_error()));
            }
            (fd, true)
        } else {
            (0, false)
        };
        let mut out = [-1; 2];
        let mut child_out = [-1; 2];
        for i in 0..2 {
            let mut fds = [0; 2];
            // SAFETY: valid array for pipe2.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
                return Err(RunError::Stdio(io::Error::last_os_error()));
            }
            out[i] = fds[0];
            child_out[i] = fds[1];
        }
        Ok(BoxIo {
            tty: None,
            stdin,
            out,
            child_out,
            own_stdin,
        })
    }

    pub(crate) fn child_fds(&self) -> StdioFds {
        StdioFds {
            stdin: self.stdin,
            stdout: self.child_out[0],
            stderr: self.child_out[1],
            controlling_tty: self.tty.is_some(),
        }
    }

    pub(crate) fn close_child_side(&self) {
        let mut fds = vec![self.child_out[0]];
        if self.child_out[1] != self.child_out[0] {
            fds.push(self.child_out[1]);
        }
        if self.own_stdin {
            fds.push(self.stdin);
        }
        for fd in fds {
            // SAFETY: closing our copies of the box's side; the box has its own.
            unsafe { libc::close(fd) };
        }
    }
}

impl Drop for BoxIo {
    fn drop(&mut self) {
        for fd in self.out {
            if fd >= 0 {
                // SAFETY: closing our read ends.
                unsafe { libc::close(fd) };
            }
        }
    }
}
