//! How many connections the server holds and how long it waits for a request: the defaults
//! and the descriptor budget that bounds them.

use crate::ServerError;
use std::time::Duration;

/// Descriptors kept free of connections for the store, the spawner and the files a request
/// opens; [`RESERVE_PER_BOX`] more are kept per box that may run at once.
const BASE_RESERVE: u64 = 128;
/// Descriptors the server holds per running box: a native box costs it two (its host's control
/// socket and the agent connection; tests/server.rs measures it), and one is kept to spare.
/// Eight before, which capped this machine's 20,000 descriptors at ~2,480 boxes.
const RESERVE_PER_BOX: u64 = 3;
/// The fewest connections worth serving once the reserve is kept.
const MIN_CONNECTIONS: u64 = 16;

/// Caps on connections and the time a connection may take to send a request's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections held at once; when full, the connection idle the longest is closed for a
    /// new one, and if none is idle the new one is answered 503 and closed.
    pub max_connections: usize,
    /// Connections held at once from one peer (an IPv4 address or an IPv6 /64); more are
    /// answered 503 and closed.
    pub max_connections_per_peer: usize,
    /// Time a connection has to send a request's complete headers, counted from when it opens
    /// or, on a kept-alive connection, from the first byte of the next request; then it is
    /// closed. Requests and streams under way are never cut by it.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may sit with nothing sent between requests before it is
    /// closed. Longer than clients keep pooled connections (a close racing a client's reuse of
    /// the connection fails that request); under pressure the idlest connection is closed
    /// first anyway.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 4096,
            max_connections_per_peer: 256,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// This process's descriptor limit and the part of it connections may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DescriptorBudget {
    /// The soft RLIMIT_NOFILE.
    pub(crate) limit: u64,
    /// Descriptors kept free of connections.
    pub(crate) reserve: u64,
    /// A connection whose descriptor number is at or above this leaves fewer than
    /// `reserve` free (descriptors are numbered lowest free first).
    pub(crate) ceiling: u64,
}

impl DescriptorBudget {
    /// Reads the soft limit on open descriptors (`airlock` raises it to the hard limit at start)
    /// and keeps a reserve for `max_running` boxes.
    pub(crate) fn probe(max_running: usize) -> Result<DescriptorBudget, ServerError> {
        // SAFETY: rlimit is plain data for getrlimit to fill.
        let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer to an rlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return Err(ServerError::Io(std::io::Error::last_os_error()));
        }
        DescriptorBudget::new(lim.rlim_cur, max_running)
    }

    fn new(limit: u64, max_running: usize) -> Result<DescriptorBudget, ServerError> {
        let boxes = u64::try_from(max_running).unwrap_or(u64::MAX);
        let reserve = RESERVE_PER_BOX
            .saturating_mul(boxes)
            .saturating_add(BASE_RESERVE);
        if limit < reserve.saturating_add(MIN_CONNECTIONS) {
            return Err(ServerError::TooFewDescriptors {
                limit,
                reserve,
                min: MIN_CONNECTIONS,
            });
        }
        Ok(DescriptorBudget {
            limit,
            reserve,
            ceiling: limit - reserve,
        })
    }

    /// The connection cap that fits this budget: `wanted`, or fewer if the descriptors left
    /// after the reserve cannot hold that many.
    pub(crate) fn fit(&self, wanted: usize) -> usize {
        usize::try_from(self.ceiling).map_or(wanted, |room| wanted.min(room))
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
