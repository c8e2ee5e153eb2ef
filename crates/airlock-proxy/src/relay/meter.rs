//! Byte accounting for one direction of a tunnel: the box-wide total checked against its byte
//! budget, and the direction's own count of bytes passed on.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts one direction's bytes. Bytes are taken from the budget before they are read, so no
/// direction ever reads (and passes on) a byte beyond it, whatever the chunk sizes.
pub(crate) struct Meter<'a> {
    /// Bytes the box has moved, all tunnels and directions.
    total: &'a AtomicU64,
    /// The box's budget for `total`; `None` = unlimited.
    budget: Option<u64>,
    /// Bytes this direction has written to its destination.
    forwarded: &'a AtomicU64,
    /// The approval grant the connection was allowed by, if it has a byte budget: its count
    /// and budget, checked like the box's.
    grant: Option<(&'a AtomicU64, u64)>,
}

impl<'a> Meter<'a> {
    pub(crate) fn new(
        total: &'a AtomicU64,
        budget: Option<u64>,
        forwarded: &'a AtomicU64,
    ) -> Meter<'a> {
        Meter {
            total,
            budget,
            forwarded,
            grant: None,
        }
    }

    /// The same meter, also counting against `grant`'s byte budget if it has one.
    pub(crate) fn with_grant(mut self, grant: Option<&'a crate::approval::Grant>) -> Meter<'a> {
        self.grant = grant.and_then(|g| g.byte_budget.map(|b| (&g.used, b)));
        self
    }

    /// Reserves up to `want` bytes of the budget; `0` when it is exhausted. Every reservation
    /// must be followed by [`Meter::settle`] before the next await.
    pub(crate) fn reserve(&self, want: usize) -> usize {
        let from_box = match self.budget {
            Some(budget) => take(self.total, budget, want as u64),
            None => want as u64,
        };
        let Some((used, budget)) = self.grant else {
            // `from_box <= want`, so it fits.
            return from_box as usize;
        };
        let granted = take(used, budget, from_box);
        if self.budget.is_some() && granted < from_box {
            self.total.fetch_sub(from_box - granted, Ordering::AcqRel);
        }
        granted as usize
    }

    /// Records that `used` of the `reserved` bytes were read; the rest goes back to the budget.
    pub(crate) fn settle(&self, reserved: usize, used: usize) {
        let used = used.min(reserved) as u64;
        if self.budget.is_some() {
            let unused = reserved as u64 - used;
            if unused > 0 {
                self.total.fetch_sub(unused, Ordering::AcqRel);
            }
        } else if used > 0 {
            self.total.fetch_add(used, Ordering::Relaxed);
        }
        if let Some((grant_used, _)) = self.grant {
            let unused = reserved as u64 - used;
            if unused > 0 {
                grant_used.fetch_sub(unused, Ordering::AcqRel);
            }
        }
    }

    /// Records `n` bytes passed on that were read before this meter began (they arrived with
    /// a request head): counted in the total and as forwarded, whatever the budget says.
    pub(crate) fn passed_unmetered(&self, n: usize) {
        self.total.fetch_add(n as u64, Ordering::AcqRel);
        if let Some((grant_used, _)) = self.grant {
            grant_used.fetch_add(n as u64, Ordering::AcqRel);
        }
        self.forwarded(n);
    }

    /// Records `n` bytes written to the destination.
    pub(crate) fn forwarded(&self, n: usize) {
        self.forwarded.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Takes up to `want` of what `budget` leaves over `used`; returns how much was taken.
fn take(used: &AtomicU64, budget: u64, want: u64) -> u64 {
    let mut granted = 0;
    let _ = used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
        granted = budget.saturating_sub(u).min(want);
        Some(u + granted)
    });
    granted
}

#[cfg(test)]
#[path = "meter_tests.rs"]
mod tests;
