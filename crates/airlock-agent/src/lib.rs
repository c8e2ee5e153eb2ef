//! `airlock-agent`: the program that runs as PID 1 inside every box.
//!
//! [`serve`] speaks the `airlock-protocol` over a connected unix stream socket held by the host:
//! it runs processes (pipes or a pty, stdin, signals, timeouts, background processes with
//! buffered output), streams files in and out, lists, stats and changes the file system, and
//! watches it. It reaps every child and orphan, and it treats the host's frames as untrusted:
//! a malformed request is answered with an error, a broken framing closes the connection, and
//! nothing the host sends can make it panic.

mod conn;
mod dispatch;
mod error;
mod files;
mod process;
mod pty;
mod reaper;
mod ring;
mod server;
mod spawn;
pub mod standalone;
mod sys;
mod transfer;
mod tunnel;
mod watch;
mod xattrs;

pub use error::{code_of, AgentError};
pub use process::STDIN_QUEUE_CAP;
pub use ring::OUTPUT_RING_CAP;
pub use server::serve;
pub use watch::MAX_WATCH_DIRS;

/// What the runtime does in every started process, after its stdio is set up and right before
/// `execve`: drop capabilities, apply rlimits, Landlock and seccomp.
///
/// Runs in the forked child of a single-threaded agent. An error aborts the start: the `exec`
/// request fails with the error's code.
pub trait AgentHooks {
    /// Confines the calling (child) process.
    fn pre_exec(&self) -> std::io::Result<()>;

    /// Whether [`AgentHooks::enter_root`] can work: checked before forking, so a box without a
    /// root refuses the exec with a clear error instead of a failed child.
    fn has_root(&self) -> bool {
        false
    }

    /// Makes the calling (child) process the box's root, before [`AgentHooks::pre_exec`]:
    /// syscalls only, no allocation (it runs between fork and exec).
    fn enter_root(&self) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(libc::EPERM))
    }
}

/// The interpreter drivers that run inside a box for the code interpreter (one process per
/// context; protocol in each file's header).
pub mod drivers {
    /// `python3 python_driver.py`, events on fd 3.
    pub const PYTHON: &str = include_str!("../drivers/python_driver.py");
    /// `node js_driver.js`, events on fd 3; written as `ts_driver.js`, its cells are
    /// TypeScript.
    pub const JAVASCRIPT: &str = include_str!("../drivers/js_driver.js");
    /// `python3 bash_driver.py` (one persistent bash), events on fd 3.
    pub const BASH: &str = include_str!("../drivers/bash_driver.py");
}
