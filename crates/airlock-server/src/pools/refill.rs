//! Keeps the pools full, in one background thread, without starving running boxes:
//! - one box at a time, for all pools together (a start never competes with another refill);
//! - never while a create is starting a box the ordinary way (creates go first);
//! - not in the first moments after a claim ([`super::set::CLAIM_GRACE`]): the claimed box's
//!   first command goes first;
//! - within a CPU budget: after a start that took `t`, the thread rests `(SHARE - 1) * t`, so
//!   refilling keeps at most 1/[`SHARE`] of one core busy over time, however slow a backend is;
//! - a pool whose start failed waits (0.5 s, doubling up to 30 s) before the next try.
//!
//! Ready boxes cost next to no CPU while they wait: a native box's init waits on its
//! connection, and a box whose backend spends CPU even when nothing runs in it (gVisor's
//! Sentry) waits parked, frozen until its claim ([`airlock_runtime::LiveSandbox::park`]). A
//! microVM's QEMU still wakes for the guest's timer ticks. The same pass throws away ready
//! boxes that ended on their own, so a claim does not meet them.

use super::set::{backoff, Pools};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Refilling keeps at most 1/SHARE of one core busy.
pub const SHARE: u32 = 4;

/// How often ready boxes are looked at when nothing else wakes the thread.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Starts the refill thread; it ends once [`Pools::shutdown`] is called.
pub fn spawn(pools: Arc<Pools>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("pool-refill".into())
        .spawn(move || run(&pools))
}

fn run(pools: &Pools) {
    while !pools.stopping.load(Ordering::SeqCst) {
        throw_away_ended(pools);
        if let Some(wait) = pools.refill_held_for(Instant::now()) {
            rest(pools, wait);
            continue;
        }
        let Some(index) = next_to_fill(pools) else {
            let state = pools.lock();
            if pools.stopping.load(Ordering::SeqCst) {
                return;
            }
            let _ = pools.wake.wait_timeout(state, LOOK_EVERY);
            continue;
        };
        let began = Instant::now();
        let outcome = pools.start_one(index);
        let took = began.elapsed();
        let stopped = {
            let mut state = pools.lock();
            let s = &mut state[index];
            s.starting = false;
            match outcome {
                Ok(ready) => {
                    s.started += 1;
                    s.failures_in_row = 0;
                    s.retry_at = None;
                    if pools.stopping.load(Ordering::SeqCst) {
                        Some(ready)
                    } else {
                        s.ready.push_back(ready);
                        None
                    }
                }
                Err(why) => {
                    eprintln!("airlock serve: pool {}: {why}", pools.pools[index].name);
                    s.failed += 1;
                    s.failures_in_row += 1;
                    s.retry_at = Some(Instant::now() + backoff(s.failures_in_row));
                    s.last_error = Some(why);
                    None
                }
            }
        };
        if let Some(ready) = stopped {
            // The server stopped while it started: it must not outlive the pools.
            ready.sandbox.kill();
            return;
        }
        rest(pools, took.saturating_mul(SHARE - 1));
    }
}

/// The first pool short of boxes that may be refilled now (marked starting), if any.
fn next_to_fill(pools: &Pools) -> Option<usize> {
    if pools.creating.load(Ordering::SeqCst) > 0 {
        return None;
    }
    let now = Instant::now();
    let mut state = pools.lock();
    let index = pools.pools.iter().zip(state.iter()).position(|(p, s)| {
        s.ready.len() < p.size && !s.starting && s.retry_at.is_none_or(|t| t <= now)
    })?;
    state[index].starting = true;
    Some(index)
}

/// Ends the ready boxes that are no longer running.
fn throw_away_ended(pools: &Pools) {
    let ended: Vec<_> = {
        let mut state = pools.lock();
        let mut ended = Vec::new();
        for s in state.iter_mut() {
            let before = s.ready.len();
            let (live, dead): (Vec<_>, Vec<_>) =
                s.ready.drain(..).partition(|r| r.sandbox.ended().is_none());
            s.ready = live.into();
            s.discarded += (before - s.ready.len()) as u64;
            ended.extend(dead);
        }
        ended
    };
    for r in ended {
        r.sandbox.kill();
    }
}

/// Waits `d`, or less if the server stops.
fn rest(pools: &Pools, d: Duration) {
    let until = Instant::now() + d;
    let mut state = pools.lock();
    while !pools.stopping.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        state = pools
            .wake
            .wait_timeout(state, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}
