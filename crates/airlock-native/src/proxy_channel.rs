//! How a descriptor the box's init makes (the proxy's listener, the workspace's change layer)
//! gets from inside the box to the supervisor.

use std::io;

/// The unix socket pair over which the box's init sends the proxy's listener. Both ends close
/// on drop.
pub(crate) struct ProxyChannel {
    ours: std::os::fd::OwnedFd,
    box_end: Option<std::os::fd::OwnedFd>,
}

impl ProxyChannel {
    pub(crate) fn new() -> io::Result<ProxyChannel> {
        let (ours, box_end) = airlock_jail::net::seqpacket_pair()?;
        Ok(ProxyChannel {
            ours,
            box_end: Some(box_end),
        })
    }

    pub(crate) fn box_end(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.box_end.as_ref().map_or(-1, |fd| fd.as_raw_fd())
    }

    /// Drops our copy of the box's end (the box has its own), so a box that never sends reads
    /// as end-of-file.
    pub(crate) fn close_box_end(&mut self) {
        self.box_end = None;
    }

    /// Waits (bounded) for the listener; `None` if the box closed the channel without one.
    pub(crate) fn receive(self) -> Option<std::net::TcpListener> {
        // A listening socket, owned from here on.
        self.receive_fd().map(std::net::TcpListener::from)
    }

    /// Waits (bounded) for a descriptor; `None` if the box closed the channel without one.
    pub(crate) fn receive_fd(self) -> Option<std::os::fd::OwnedFd> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let mut pfd = libc::pollfd {
            fd: self.ours.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, 30_000) } == 1;
        let fd = if ready {
            airlock_jail::net::recv_fd(self.ours.as_raw_fd())
                .ok()
                .flatten()
        } else {
            None
        };
        // SAFETY: fd is a fresh descriptor received over SCM_RIGHTS, owned from here on.
        fd.map(|fd| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }
}
