//! Loopback sockets do not need pacing.
//!
//! The box reaches the proxy over loopback inside its own network namespace, and an upstream
//! may be on the host's loopback (when granted). On such a connection nothing is gained by
//! pacing, but a pacing congestion control (BBR, a common host default) still times every
//! burst with high-resolution timers, which costs the proxy about as much CPU per byte as
//! copying it. Measured on a 2-core host with BBR, 1 GiB through a tunnel to a loopback
//! upstream: the relay's CPU per byte about halves with Reno on its loopback sockets.

use super::sys;
use std::net::SocketAddr;
use std::os::fd::AsFd;

/// The algorithm for loopback connections: built into every kernel, always permitted for
/// unprivileged processes (`net.ipv4.tcp_allowed_congestion_control`), and without pacing.
/// A loopback link does not drop, so its loss response never comes into play.
const LOOPBACK_CONGESTION_CONTROL: &[u8] = b"reno";

/// Gives `socket` a non-pacing congestion control if `addr` (the address it listens on or
/// connects to) is a loopback address; every other socket (the real network) keeps the host's
/// choice. Set before the connection exists, so the host's algorithm never starts on it (a
/// listener's setting passes to the connections it accepts). Best effort: a refusal only
/// costs CPU.
pub(crate) fn unpace_if_loopback(socket: &impl AsFd, addr: SocketAddr) {
    if addr.ip().is_loopback() {
        let _ = sys::set_congestion_control(socket.as_fd(), LOOPBACK_CONGESTION_CONTROL);
    }
}

#[cfg(test)]
#[path = "loopback_tests.rs"]
mod tests;
