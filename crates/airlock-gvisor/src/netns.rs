//! The proxied box's network: a network namespace airlock makes that holds nothing but
//! loopback and the egress proxy's listening socket. runsc runs in it with host networking, so
//! the box's sockets are host sockets there: the only thing they can reach is the proxy.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The namespace (held by a descriptor, to enter before runsc starts) and the proxy's door.
pub struct ProxyDoor {
    pub netns: OwnedFd,
    pub listener: TcpListener,
}

fn setns(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns on a namespace descriptor we hold.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl ProxyDoor {
    /// Makes the namespace and the listener on 127.0.0.1:`port` in it, and returns this
    /// (single-threaded) process to the host's namespace, where the proxy connects out.
    pub fn make(port: u16) -> io::Result<ProxyDoor> {
        let host = OwnedFd::from(std::fs::File::open("/proc/self/ns/net")?);
        // SAFETY: unshare with a flag; the process is single-threaded here.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } == -1 {
            return Err(io::Error::last_os_error());
        }
        let made = (|| {
            airlock_jail::net::loopback_up()?;
            let fd = airlock_jail::net::listen_loopback(port)?;
            // SAFETY: a fresh listening descriptor, ours alone.
            let listener = TcpListener::from(unsafe { OwnedFd::from_raw_fd(fd) });
            let netns = OwnedFd::from(std::fs::File::open("/proc/self/ns/net")?);
            Ok(ProxyDoor { netns, listener })
        })();
        setns(&host)?;
        made
    }
}
