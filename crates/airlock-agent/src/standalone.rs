//! The agent as its own executable: `airlock agent --fd N` (or the small `airlock-agent --fd N`)
//! serves the protocol on an inherited, connected stream socket. This is how a box that airlock
//! does not fork itself (a container's init, a VM guest's init) gets its agent.

use crate::{serve, AgentError, AgentHooks};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// Hooks for an agent whose box already confines everything it runs (the native init restricts
/// itself before serving; another backend's box is confined from outside): nothing to add
/// before `execve`.
pub struct AlreadyConfined;

impl AgentHooks for AlreadyConfined {
    fn pre_exec(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Hooks `H` plus the box's root: with `ns` (a user namespace made by
/// `airlock_jail::box_root::make`), a root exec joins it and runs as its uid 0, without
/// capabilities; without, a root exec is refused as unsupported.
pub struct WithRoot<H> {
    pub hooks: H,
    pub ns: Option<OwnedFd>,
}

impl<H: AgentHooks> AgentHooks for WithRoot<H> {
    fn pre_exec(&self) -> std::io::Result<()> {
        self.hooks.pre_exec()
    }

    fn has_root(&self) -> bool {
        self.ns.is_some()
    }

    fn enter_root(&self) -> std::io::Result<()> {
        match &self.ns {
            Some(ns) => airlock_jail::box_root::enter(ns.as_fd()),
            None => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        }
    }
}

/// Hooks `H` plus a root for a kernel that cannot join a user namespace (gVisor's): each root
/// exec makes a user namespace of its own, uid 0 there being the agent's own user
/// ([`airlock_jail::box_root::OwnRoot`]).
pub struct WithOwnRoot<H> {
    pub hooks: H,
    pub root: airlock_jail::box_root::OwnRoot,
}

impl<H: AgentHooks> AgentHooks for WithOwnRoot<H> {
    fn pre_exec(&self) -> std::io::Result<()> {
        self.hooks.pre_exec()
    }

    fn has_root(&self) -> bool {
        true
    }

    fn enter_root(&self) -> std::io::Result<()> {
        self.root.enter()
    }
}

/// Takes inherited descriptor `fd` as the box's root namespace (`--root-ns-fd`): it must be a
/// user namespace, and it is closed on exec so no command the agent starts inherits it.
pub fn root_namespace_fd(fd: i32) -> Result<OwnedFd, StandaloneError> {
    // SAFETY: fcntl only inspects the descriptor number.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err(StandaloneError::NotOpen(fd));
    }
    // NS_GET_NSTYPE (_IO(0xb7, 0x3)): the kind of namespace a descriptor names.
    const NS_GET_NSTYPE: libc::c_ulong = 0xb703;
    // SAFETY: an ioctl without an argument on a descriptor we just checked is open.
    let kind = unsafe { libc::ioctl(fd, NS_GET_NSTYPE as _) };
    if kind != libc::CLONE_NEWUSER {
        return Err(StandaloneError::NotAUserNamespace(fd));
    }
    // SAFETY: sets close-on-exec on a descriptor we just checked is open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the caller handed descriptor `fd` to the agent; nothing else owns it from here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Why a descriptor cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    #[error("descriptor {0} is not open: start the agent with its connection there (e.g. `airlock agent --fd 3 3<&…`)")]
    NotOpen(i32),
    #[error("descriptor {0} is not a stream socket: the agent speaks over a connected unix or vsock stream")]
    NotAStream(i32),
    #[error("descriptor {0} is not a user namespace: --root-ns-fd takes the box's root namespace")]
    NotAUserNamespace(i32),
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

/// `airlock-agent --fd N [--root-ns-fd M]` / `airlock agent --fd N`: the exit code (0 when the
/// host closed the connection, 2 for bad arguments, 1 when serving failed). With
/// `--root-ns-fd`, descriptor M is the box's root namespace ([`WithRoot`]).
pub fn main_with_args(args: &[String]) -> i32 {
    let parsed = match args {
        [flag, n] if flag == "--fd" => n.parse::<i32>().ok().map(|fd| (fd, None)),
        [flag, n, root_flag, m] if flag == "--fd" && root_flag == "--root-ns-fd" => {
            match (n.parse::<i32>(), m.parse::<i32>()) {
                (Ok(fd), Ok(root)) => Some((fd, Some(root))),
                _ => None,
            }
        }
        _ => None,
    };
    let Some((fd, root)) = parsed else {
        eprintln!(
            "usage: airlock-agent --fd N [--root-ns-fd M]  (N: a connected stream socket to the host; \
             M: the box's root user namespace)"
        );
        return 2;
    };
    let ns = match root.map(root_namespace_fd).transpose() {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!("airlock agent: {e}");
            return 1;
        }
    };
    let hooks = WithRoot {
        hooks: AlreadyConfined,
        ns,
    };
    match serve_fd_with(fd, &hooks) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("airlock agent: {e}");
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, IntoRawFd};

    #[test]
    fn a_root_namespace_descriptor_must_be_a_user_namespace() {
        let (r, _w) = std::io::pipe().unwrap();
        let fd = r.as_raw_fd();
        assert!(matches!(
            root_namespace_fd(fd),
            Err(StandaloneError::NotAUserNamespace(n)) if n == fd
        ));
        assert!(matches!(
            root_namespace_fd(-1),
            Err(StandaloneError::NotOpen(-1))
        ));
        // The caller's own user namespace is one: taken, and closed on exec from then on.
        let ns = std::fs::File::open("/proc/self/ns/user")
            .unwrap()
            .into_raw_fd();
        // SAFETY: clears close-on-exec on a descriptor this test just opened.
        unsafe { libc::fcntl(ns, libc::F_SETFD, 0) };
        let owned = root_namespace_fd(ns).unwrap();
        // SAFETY: fcntl only inspects the descriptor.
        let flags = unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }

    #[test]
    fn bad_arguments_are_refused_with_the_usage() {
        assert_eq!(main_with_args(&["--fd".into()]), 2);
        assert_eq!(
            main_with_args(&["--fd".into(), "3".into(), "--root-ns-fd".into(), "x".into()]),
            2
        );
    }
}
