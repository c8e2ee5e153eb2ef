//! The agent as its own executable: `airlock agent --fd N` (or the small `airlock-agent --fd N`)
//! serves the protocol on an inherited, connected stream socket. This is how a box that airlock
//! does not fork itself (a container's init, a VM guest's init) gets its agent.

use crate::{serve, AgentError, AgentHooks};
use std::os::fd::{FromRawFd, OwnedFd};

/// Hooks for an agent whose box already confines everything it runs (the native init restricts
/// itself before serving; another backend's box is confined from outside): nothing to add
/// before `execve`.
pub struct AlreadyConfined;

impl AgentHooks for AlreadyConfined {
    fn pre_exec(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a descriptor cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error("descriptor {0} is not open: start the agent with its connection there (e.g. `airlock agent --fd 3 3<&…`)")]
    NotOpen(i32),
    #[error("descriptor {0} is not a stream socket: the agent speaks over a connected unix or vsock stream")]
    NotAStream(i32),
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Serves the agent protocol on descriptor `fd` until the host closes it.
pub fn serve_fd(fd: i32) -> Result<(), StandaloneError> {
    serve_fd_with(fd, &AlreadyConfined)
}

/// [`serve_fd`], confining each command with `hooks` before its `execve`.
pub fn serve_fd_with(fd: i32, hooks: &dyn AgentHooks) -> Result<(), StandaloneError> {
    // SAFETY: fcntl only inspects the descriptor number.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(StandaloneError::NotOpen(fd));
    }
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: kind and len are valid for getsockopt to write one int into.
    let got = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if got == -1 || kind != libc::SOCK_STREAM {
        return Err(StandaloneError::NotAStream(fd));
    }
    // The processes the agent starts must not inherit its connection.
    // SAFETY: sets close-on-exec on a descriptor we just checked is open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the caller handed descriptor `fd` to the agent; nothing else owns it from here.
    let conn = unsafe { OwnedFd::from_raw_fd(fd) };
    serve(conn, hooks)?;
    Ok(())
}

/// `airlock-agent --fd N` / `airlock agent --fd N`: the exit code (0 when the host closed the
/// connection, 2 for bad arguments, 1 when serving failed).
pub fn main_with_args(args: &[String]) -> i32 {
    let fd = match args {
        [flag, n] if flag == "--fd" => n.parse::<i32>().ok(),
        _ => None,
    };
    let Some(fd) = fd else {
        eprintln!("usage: airlock-agent --fd N  (N: a connected stream socket to the host)");
        return 2;
    };
    match serve_fd(fd) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("airlock agent: {e}");
            1
        }
    }
}
