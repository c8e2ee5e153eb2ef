//! The session manager: creates sessions, caps the boxes alive at once with a FIFO queue for the
//! rest, expires them, and lends their handles for operations. One manager serves every thread of
//! the server.
//!
//! Locking: one mutex guards the [`Table`]; it is held only for bookkeeping. Starting, stopping,
//! checking and using a box all happen with it released: a slot (or the handle) is taken out under
//! the lock, the slow work runs unlocked, and the outcome is published under the lock again.

use super::table::{Admission, LendRefusal, StartJob, Table};
use super::{
    BoxFactory, Clock, ManagerConfig, ManagerError, SessionInfo, SessionObserver, SessionSpec,
    SessionState,
};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Sessions and their boxes. All methods take `&self`; share it in an `Arc`.
pub struct SessionManager<F: BoxFactory> {
    factory: F,
    clock: Arc<dyn Clock>,
    observer: Arc<dyn SessionObserver>,
    table: Mutex<Table<F::Handle>>,
    /// Signalled on every change of the table.
    changed: Condvar,
    /// Held while telling the observer, so changes reach it one at a time and in order.
    telling: Mutex<()>,
}

impl<F: BoxFactory> SessionManager<F> {
    /// A manager with no sessions. Errors: a configuration under which no box could run.
    pub fn new(
        factory: F,
        config: ManagerConfig,
        clock: Arc<dyn Clock>,
        observer: Arc<dyn SessionObserver>,
    ) -> Result<SessionManager<F>, ManagerError> {
        if let Some(problem) = config.problem() {
            return Err(ManagerError::InvalidConfig(problem));
        }
        Ok(SessionManager {
            factory,
            clock,
            observer,
            table: Mutex::new(Table::new(config)),
            changed: Condvar::new(),
            telling: Mutex::new(()),
        })
    }

    /// Registers a session. If a slot is free and nobody waits, its box starts now, in this call
    /// (the result is then `Running`, or `Failed` with the factory's error); otherwise it joins the
    /// queue (`Queued`, with its position and the deadline by which it must have started) and the
    /// call returns at once. Errors: a timeout out of range, an id in use, a full queue, a
    /// shutdown under way.
    pub fn create(&self, id: String, spec: SessionSpec) -> Result<SessionInfo, ManagerError> {
        let admitted = {
            let mut table = self.lock();
            let admission = table.admit(id.clone(), spec, self.clock.now_ms())?;
            self.changed.notify_all();
            match admission {
                Admission::Start(job) => Err(job),
                Admission::Queued(key) => Ok(table.info(key)),
            }
        };
        let info = match admitted {
            Ok(info) => info,
            Err(job) => self.start(job),
        };
        self.start_queued();
        self.tell();
        info.ok_or(ManagerError::NotFound(id))
    }

    /// Waits until the session has left `Queued` and `Starting`, or `timeout` has passed, and
    /// returns its record either way (check its state).
    pub fn wait_started(&self, id: &str, timeout: Duration) -> Result<SessionInfo, ManagerError> {
        let give_up = Instant::now() + timeout;
        let mut table = self.lock();
        loop {
            let info = table
                .get(id)
                .ok_or_else(|| ManagerError::NotFound(id.to_string()))?;
            let left = give_up.saturating_duration_since(Instant::now());
            if !matches!(info.state, SessionState::Queued | SessionState::Starting)
                || left.is_zero()
            {
                return Ok(info);
            }
            table = self
                .changed
                .wait_timeout(table, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The session's record, if it is known (ended sessions are kept up to `keep_ended`).
    pub fn get(&self, id: &str) -> Option<SessionInfo> {
        self.lock().get(id)
    }

    /// Sessions in any of `states` (every state when empty) whose metadata contains every pair of
    /// `metadata`, oldest first.
    pub fn list(
        &self,
        states: &[SessionState],
        metadata: &BTreeMap<String, String>,
    ) -> Vec<SessionInfo> {
        self.lock().list(states, metadata)
    }

    /// Sets the box's remaining life to `timeout_ms` from now (for a queued session: its life once
    /// started). Errors: a timeout out of range (at most `max_timeout_ms`), an ended session.
    pub fn set_timeout(&self, id: &str, timeout_ms: i64) -> Result<SessionInfo, ManagerError> {
        let info = {
            let mut table = self.lock();
            let key = table.set_timeout(id, timeout_ms, self.clock.now_ms())?;
            self.changed.notify_all();
            table.info(key)
        };
        self.tell();
        info.ok_or_else(|| ManagerError::NotFound(id.to_string()))
    }

    /// Kills a session: a queued one leaves the queue, a running one's box is stopped, and it ends
    /// `Killed`. A box in use by [`SessionManager::with_handle`] (or still starting) is stopped as
    /// soon as that call (or the start) returns; the session is `Killed` at once either way. The
    /// freed slot goes to the head of the queue, whose box starts in this call.
    /// Errors: an unknown or already ended session.
    pub fn kill(&self, id: &str) -> Result<SessionInfo, ManagerError> {
        let (key, handle, info) = {
            let mut table = self.lock();
            let key = table.key(id)?;
            let queued = table
                .get(id)
                .is_some_and(|i| i.state == SessionState::Queued);
            let reason = if queued {
                "removed from the queue"
            } else {
                "killed by request"
            };
            let handle = table.end(key, SessionState::Killed, reason, self.clock.now_ms())?;
            self.changed.notify_all();
            (key, handle, table.info(key))
        };
        if let Some(h) = handle {
            self.stop(key, h);
        }
        self.start_queued();
        self.tell();
        info.ok_or_else(|| ManagerError::NotFound(id.to_string()))
    }

    /// Runs `f` on the handle of a running session. Meanwhile the box cannot be stopped (a kill or
    /// expiry takes effect when `f` returns) and other calls for the same session wait their turn;
    /// other sessions are not affected (so `f` must not call `with_handle` for its own session).
    /// A panic in `f` leaves the session running and carries on. Errors: an unknown or not
    /// running session.
    pub fn with_handle<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut F::Handle) -> R,
    ) -> Result<R, ManagerError> {
        let (key, mut handle) = {
            let mut table = self.lock();
            loop {
                match table.lend(id) {
                    Ok(lent) => break lent,
                    Err(LendRefusal::Refused(e)) => return Err(e),
                    Err(LendRefusal::Busy) => {
                        table = self
                            .changed
                            .wait(table)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                }
            }
        };
        // A panic in `f` must not lose the handle (its slot would leak): take it back, then
        // let the panic go on.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(&mut handle)));
        self.give_back(key, handle);
        self.tell();
        match outcome {
            Ok(r) => Ok(r),
            Err(p) => panic::resume_unwind(p),
        }
    }

    /// Housekeeping; call it periodically. Expires running boxes past their deadline (`Expired`),
    /// fails queued sessions past theirs (`Failed`), marks boxes that ended on their own `Dead`,
    /// and starts queued sessions in order while slots are free.
    pub fn tick(&self) {
        let (mut to_stop, idle) = {
            let mut table = self.lock();
            let now = self.clock.now_ms();
            let mut to_stop = Vec::new();
            for (key, state, reason) in table.overdue(now) {
                if let Ok(Some(h)) = table.end(key, state, &reason, now) {
                    to_stop.push((key, h));
                }
            }
            self.changed.notify_all();
            (to_stop, table.lend_idle())
        };
        let checked: Vec<_> = idle
            .into_iter()
            .map(|(key, mut h)| {
                let alive = self.factory.alive(&mut h);
                (key, h, alive)
            })
            .collect();
        {
            let mut table = self.lock();
            let now = self.clock.now_ms();
            for (key, h, alive) in checked {
                if !alive {
                    // The handle is lent, so `end` leaves it to us: it comes back from give_back.
                    let _ = table.end(key, SessionState::Dead, "the box ended on its own", now);
                }
                if let Some(h) = table.give_back(key, h) {
                    to_stop.push((key, h));
                }
            }
            self.changed.notify_all();
        }
        self.stop_all(to_stop);
        self.start_queued();
        self.tell();
    }

    /// Ends every session (`Killed`, "the server shut down"), stops every box and refuses new
    /// sessions. Returns once every box is stopped, including those in use or starting.
    pub fn shutdown(&self) {
        let to_stop = {
            let mut table = self.lock();
            table.close();
            let now = self.clock.now_ms();
            let mut to_stop = Vec::new();
            for key in table.live() {
                if let Ok(Some(h)) =
                    table.end(key, SessionState::Killed, "the server shut down", now)
                {
                    to_stop.push((key, h));
                }
            }
            self.changed.notify_all();
            to_stop
        };
        self.stop_all(to_stop);
        let mut table = self.lock();
        while table.occupied() > 0 {
            table = self
                .changed
                .wait(table)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(table);
        self.tell();
    }

    /// Starts one box and publishes the outcome (returned); stops the box if its session ended
    /// meanwhile.
    fn start(&self, (key, id, spec): StartJob) -> Option<SessionInfo> {
        let result = self.factory.start(&id, &spec);
        let (late, info) = {
            let mut table = self.lock();
            let late = table.started(key, result, self.clock.now_ms());
            self.changed.notify_all();
            (late, table.info(key))
        };
        if let Some(h) = late {
            self.stop(key, h);
        }
        info
    }

    /// Starts queued sessions, in order, while slots are free.
    fn start_queued(&self) {
        loop {
            let job = {
                let mut table = self.lock();
                let job = table.next_start(self.clock.now_ms());
                self.changed.notify_all();
                job
            };
            match job {
                Some(job) => {
                    self.start(job);
                }
                None => return,
            }
        }
    }

    /// Returns a lent handle; stops the box if its session ended meanwhile.
    fn give_back(&self, key: u64, handle: F::Handle) {
        let ended = {
            let mut table = self.lock();
            let ended = table.give_back(key, handle);
            self.changed.notify_all();
            ended
        };
        if let Some(h) = ended {
            self.stop(key, h);
            self.start_queued();
        }
    }

    /// Stops a box, then frees its slot.
    fn stop(&self, key: u64, handle: F::Handle) {
        self.factory.stop(handle);
        self.lock().release(key);
        self.changed.notify_all();
    }

    fn stop_all(&self, boxes: Vec<(u64, F::Handle)>) {
        for (key, h) in boxes {
            self.stop(key, h);
        }
    }

    /// Tells the observer every change not yet told, in order. Whoever holds `telling` drains the
    /// outbox until it is empty, so when this returns the caller's own changes have been told.
    fn tell(&self) {
        let _telling = self.telling.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let changes = self.lock().take_changes();
            if changes.is_empty() {
                return;
            }
            for info in &changes {
                self.observer.session_changed(info);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table<F::Handle>> {
        // The table is only changed by code that cannot panic halfway, so a poisoned lock still
        // guards a consistent table.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
