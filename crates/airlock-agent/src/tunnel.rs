//! TCP connections the host opens to a port on the box's own loopback (`tunnel`): how a server
//! in the box is reached from outside without giving the box a network of its own. The agent
//! connects from inside the box, so every box-side rule (its network namespace, Landlock,
//! seccomp) applies to the connection as to any in-box client.
//!
//! Flow control: the box end's bytes are read only while the host connection's queue is below
//! [`crate::server::HIGH_WATER`]; bytes for the box end queue here, and while any tunnel holds
//! more than [`QUEUE_HIGH`] the agent stops reading the host socket (backpressure onto the
//! host, never unbounded memory).

use crate::conn::Connection;
use crate::sys;
use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Open tunnels per box; one more is refused with `limit`.
pub(crate) const MAX_TUNNELS: usize = 256;
/// Bytes queued for one tunnel's box end above which the host socket is not read.
pub(crate) const QUEUE_HIGH: usize = 1 << 20;
/// Bytes read from a box end at a time.
const CHUNK: usize = 64 * 1024;
/// How long a connect to the box's loopback may take (a full accept queue).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One connection to a port in the box.
pub(crate) struct Tunnel {
    fd: OwnedFd,
    /// Bytes from the host not yet written to the box end.
    queue: VecDeque<u8>,
    /// The box end closed its side (or failed); Eof was sent to the host.
    read_done: bool,
    /// Writing to the box end failed; what the host sends is dropped.
    write_failed: bool,
}

/// Connects to `port` on the box's loopback: IPv4 first, then IPv6 (a server bound to `::1`
/// only). The error is the IPv4 one unless IPv6 failed otherwise than "refused".
pub(crate) fn connect(port: u16) -> io::Result<Tunnel> {
    let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = match TcpStream::connect_timeout(&v4, CONNECT_TIMEOUT) {
        Ok(s) => s,
        Err(e4) => {
            let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
            TcpStream::connect_timeout(&v6, CONNECT_TIMEOUT).map_err(|_| e4)?
        }
    };
    stream.set_nonblocking(true)?;
    // Interactive traffic (WebSocket frames) must not wait for Nagle.
    stream.set_nodelay(true)?;
    Ok(Tunnel {
        fd: OwnedFd::from(stream),
        queue: VecDeque::new(),
        read_done: false,
        write_failed: false,
    })
}

impl Tunnel {
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Whether the box end may be read (it has not ended).
    pub(crate) fn wants_read(&self) -> bool {
        !self.read_done
    }

    /// Whether bytes wait to be written to the box end.
    pub(crate) fn wants_write(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether this tunnel holds so much for its box end that the host must wait.
    pub(crate) fn is_full(&self) -> bool {
        self.queue.len() > QUEUE_HIGH
    }

    /// Reads one chunk from the box end and forwards it on `channel`; at its end (or a
    /// failure) sends Eof once.
    pub(crate) fn read_box(&mut self, channel: u32, conn: &mut Connection, buf: &mut [u8]) {
        if self.read_done {
            return;
        }
        let chunk = buf.len().min(CHUNK);
        match sys::read(&self.fd, buf.get_mut(..chunk).unwrap_or_default()) {
            Ok(n) if n > 0 => conn.data(channel, buf.get(..n).unwrap_or_default()),
            Err(e) if sys::would_block(&e) => {}
            // Its end, or a reset: the host hears Eof either way.
            Ok(_) | Err(_) => {
                self.read_done = true;
                conn.eof(channel);
            }
        }
    }

    /// Queues bytes from the host for the box end and writes what it takes.
    pub(crate) fn push(&mut self, data: &[u8]) {
        if self.write_failed {
            return;
        }
        self.queue.extend(data);
        self.write_box();
    }

    /// Writes queued bytes until the box end's socket is full.
    pub(crate) fn write_box(&mut self) {
        while !self.queue.is_empty() {
            let (front, _) = self.queue.as_slices();
            match sys::write(&self.fd, front) {
                Ok(n) => {
                    self.queue.drain(..n);
                }
                Err(e) if sys::would_block(&e) => return,
                Err(_) => {
                    // The box end is gone: drop what is queued; its read side reports the end.
                    self.write_failed = true;
                    self.queue.clear();
                    return;
                }
            }
        }
    }
}
