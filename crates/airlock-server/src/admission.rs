//! Which connections the server keeps. At most `max` at once and `per_peer` from one peer (an
//! IPv4 address, or an IPv6 /64). When the server is full, the connection that has been idle the
//! longest (no request in flight: still sending its first headers, or kept alive between
//! requests) is closed to make room; a connection busy with a request or a stream is never
//! taken. A peer over its own cap is refused whatever else is free.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::oneshot;

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its peer already holds its share of connections.
    PeerFull,
    /// Every connection is busy with a request (none idle to close).
    ServerFull,
}

/// The connections being served, counted globally and per peer.
#[derive(Debug)]
pub(crate) struct Admissions {
    max: usize,
    per_peer: usize,
    epoch: Instant,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    conns: HashMap<u64, Entry>,
    peers: HashMap<IpAddr, usize>,
}

#[derive(Debug)]
struct Entry {
    peer: IpAddr,
    activity: Arc<Activity>,
    /// Dropped to tell the connection's task to close it.
    _close: oneshot::Sender<()>,
}

/// A connection that was let in. Holding it holds the connection's place; dropping it frees it.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The connection's place in the table.
    pub(crate) slot: Slot,
    /// Resolves when the server closes this connection to make room for a newer one.
    pub(crate) evicted: oneshot::Receiver<()>,
    /// Tells the table when the connection has a request in flight.
    pub(crate) activity: Arc<Activity>,
}

/// A connection's place in the table, freed on drop.
#[derive(Debug)]
pub(crate) struct Slot {
    admissions: Arc<Admissions>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.admissions.lock();
        table.remove(self.id);
    }
}

impl Admissions {
    /// A table holding at most `max` connections and `per_peer` from one peer (both at least 1).
    pub(crate) fn new(max: usize, per_peer: usize) -> Arc<Admissions> {
        Arc::new(Admissions {
            max: max.max(1),
            per_peer: per_peer.max(1),
            epoch: Instant::now(),
            table: Mutex::default(),
        })
    }

    /// Lets a connection from `peer` in, or says why not. `pressed`: the server is short of
    /// descriptors, so a connection comes in only in place of an idle one.
    pub(crate) fn admit(
        self: &Arc<Self>,
        peer: IpAddr,
        pressed: bool,
    ) -> Result<Admitted, Refusal> {
        let peer = peer_key(peer);
        let mut table = self.lock();
        if table.peers.get(&peer).copied().unwrap_or(0) >= self.per_peer {
            return Err(Refusal::PeerFull);
        }
        if (pressed || table.conns.len() >= self.max) && !table.evict_longest_idle() {
            return Err(Refusal::ServerFull);
        }
        let id = table.next_id;
        table.next_id += 1;
        let activity = Arc::new(Activity::new(self.epoch));
        let (close, evicted) = oneshot::channel();
        table.conns.insert(
            id,
            Entry {
                peer,
                activity: Arc::clone(&activity),
                _close: close,
            },
        );
        *table.peers.entry(peer).or_insert(0) += 1;
        Ok(Admitted {
            slot: Slot {
                admissions: Arc::clone(self),
                id,
            },
            evicted,
            activity,
        })
    }

    /// Connections held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().conns.len()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while the lock was held left counts that are still consistent (every update
        // is a single insert or remove), so a poisoned lock is used as it is.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Table {
    fn remove(&mut self, id: u64) {
        let Some(entry) = self.conns.remove(&id) else {
            return;
        };
        if let Some(n) = self.peers.get_mut(&entry.peer) {
            *n -= 1;
            if *n == 0 {
                self.peers.remove(&entry.peer);
            }
        }
    }

    /// Closes the connection idle the longest, if any is idle.
    fn evict_longest_idle(&mut self) -> bool {
        let victim = self
            .conns
            .iter()
            .filter_map(|(id, e)| e.activity.idle_since().map(|t| (t, *id)))
            .min();
        match victim {
            Some((_, id)) => {
                self.remove(id);
                true
            }
            None => false,
        }
    }
}

/// The peer a connection is counted against: an IPv4 address (IPv4-mapped IPv6 included) or the
/// /64 an IPv6 address is in, since one host commonly holds a whole /64.
pub(crate) fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
        v4 => v4,
    }
}

/// No request head is being received.
const NO_HEAD: u64 = u64::MAX;

/// Whether a connection has a request in flight, since when it has had none, and since when the
/// head of its next request has been arriving.
#[derive(Debug)]
pub(crate) struct Activity {
    epoch: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds after `epoch` when the last request ended (or the connection opened).
    idle_since_ms: AtomicU64,
    /// Milliseconds after `epoch` when the connection opened or, after a request, the first
    /// byte of the next one arrived; [`NO_HEAD`] while none is awaited.
    head_since_ms: AtomicU64,
}

/// What a connection is doing, for its timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A request is in flight (its response may be a long stream): no timeout applies.
    Busy,
    /// Waiting for the complete head of a request, for this long (ms).
    Head(u64),
    /// Kept alive between requests with nothing received, for this long (ms).
    Idle(u64),
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        let a = Activity {
            epoch,
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            head_since_ms: AtomicU64::new(0),
        };
        // A new connection owes its first request's head from the moment it opens.
        let now = a.now_ms();
        a.idle_since_ms.store(now, Ordering::Relaxed);
        a.head_since_ms.store(now, Ordering::Relaxed);
        a
    }

    /// Marks a request in flight until the returned guard is dropped (with its response body).
    /// Its head is complete.
    pub(crate) fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_since_ms.store(NO_HEAD, Ordering::Relaxed);
        Busy(Arc::clone(self))
    }

    /// Bytes arrived: between requests, they start the next request's head (and its timeout).
    pub(crate) fn received(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let now = self.now_ms();
            let _ = self.head_since_ms.compare_exchange(
                NO_HEAD,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// What the connection is doing now.
    pub(crate) fn phase(&self) -> Phase {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Phase::Busy;
        }
        let now = self.now_ms();
        match self.head_since_ms.load(Ordering::Relaxed) {
            NO_HEAD => Phase::Idle(now.saturating_sub(self.idle_since_ms.load(Ordering::Relaxed))),
            since => Phase::Head(now.saturating_sub(since)),
        }
    }

    /// When the connection went idle, or None while a request is in flight.
    fn idle_since(&self) -> Option<u64> {
        (self.in_flight.load(Ordering::Acquire) == 0)
            .then(|| self.idle_since_ms.load(Ordering::Relaxed))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// A request in flight on a connection; see [`Activity::begin`].
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0
            .idle_since_ms
            .store(self.0.now_ms(), Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
