//! The session manager: creates sessions, caps the boxes alive at once with a FIFO queue for the
//! rest, expires them, and lends their handles for operations. One manager serves every thread of
//! the server.
//!
//! Locking: one mutex guards the [`Table`]; it is held only for bookkeeping. Starting, stopping,
//! checking and using a box all happen with it released: a slot (or the handle) is taken out under
//! the lock, the slow work runs unlocked, and the outcome is published under the lock again.

use super::table::{Admission, Due, Job, LendRefusal, StartJob, Table};
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
            Err(job) => self.run_job(job).0,
        };
        self.start_queued();
        self.tell();
        info.ok_or(ManagerError::NotFound(id))
    }

    /// Waits until the session has left `Queued`, `Starting` and `Resuming`, or `timeout` has
    /// passed, and returns its record either way (check its state).
    pub fn wait_started(&self, id: &str, timeout: Duration) -> Result<SessionInfo, ManagerError> {
        let give_up = Instant::now() + timeout;
        let mut table = self.lock();
        loop {
            let info = table
                .get(id)
                .ok_or_else(|| ManagerError::NotFound(id.to_string()))?;
            let left = give_up.saturating_duration_since(Instant::now());
            if !matches!(
                info.state,
                SessionState::Queued | SessionState::Starting | SessionState::Resuming
            ) || left.is_zero()
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
    ///
    /// A paused session is resumed first when its spec says `auto_resume` (waiting up to the
    /// queue's timeout for a slot); otherwise it is refused with
    /// [`ManagerError::PausedNoAutoResume`].
    pub fn with_handle<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut F::Handle) -> R,
    ) -> Result<R, ManagerError> {
        let (key, mut handle) = self.lend_resuming(id)?;
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

    /// Runs `f` on the handle of a running session, as [`SessionManager::with_handle`] does, but
    /// only to look: it neither resumes a paused session nor counts as activity (a metrics
    /// sampler, a health check must not keep a box awake). Errors: an unknown or not running
    /// session.
    pub fn inspect<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut F::Handle) -> R,
    ) -> Result<R, ManagerError> {
        let (key, mut handle) = {
            let mut table = self.lock();
            loop {
                match table.lend(id, false) {
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
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(&mut handle)));
        let ended = {
            let mut table = self.lock();
            let ended = table.give_back(key, handle, None);
            self.changed.notify_all();
            ended
        };
        if let Some(h) = ended {
            self.stop(key, h);
            self.start_queued();
        }
        self.tell();
        match outcome {
            Ok(r) => Ok(r),
            Err(p) => panic::resume_unwind(p),
        }
    }

    /// Lends a running session's handle, resuming a paused one first when its spec allows.
    fn lend_resuming(&self, id: &str) -> Result<(u64, F::Handle), ManagerError> {
        let mut resumed_once = false;
        loop {
            let mut table = self.lock();
            let refusal = loop {
                match table.lend(id, true) {
                    Ok(lent) => return Ok(lent),
                    Err(LendRefusal::Refused(e)) => break e,
                    Err(LendRefusal::Busy) => {
                        table = self
                            .changed
                            .wait(table)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                }
            };
            let paused = matches!(
                refusal,
                ManagerError::NotRunning {
                    state: SessionState::Paused | SessionState::Resuming,
                    ..
                }
            );
            if !paused || resumed_once {
                return Err(refusal);
            }
            if !table.spec(id).is_some_and(|s| s.auto_resume) {
                return Err(ManagerError::PausedNoAutoResume(id.to_string()));
            }
            drop(table);
            resumed_once = true;
            match self.resume(id) {
                Ok(_) | Err(ManagerError::NotPaused { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Pauses a running session's box: with `memory`, so that its processes continue where they
    /// were (where the box's kind can; the factory decides how), else keeping only its files.
    /// The paused session gives its slot back (the head of the queue starts) and does not expire.
    /// Waits for operations on the box to finish first. Errors: an unknown session, one already
    /// paused, one not running, or a pause the box refused (it then runs on).
    pub fn pause(&self, id: &str, memory: bool) -> Result<SessionInfo, ManagerError> {
        self.pause_with_reason(id, memory, "paused on request")
    }

    fn pause_with_reason(
        &self,
        id: &str,
        memory: bool,
        reason: &str,
    ) -> Result<SessionInfo, ManagerError> {
        let (key, handle, spec) = {
            let mut table = self.lock();
            loop {
                match table.lend(id, false) {
                    Ok((key, h)) => {
                        let spec = table
                            .spec(id)
                            .ok_or_else(|| ManagerError::NotFound(id.to_string()))?;
                        break (key, h, spec);
                    }
                    Err(LendRefusal::Refused(ManagerError::NotRunning {
                        state: SessionState::Paused,
                        ..
                    })) => return Err(ManagerError::AlreadyPaused(id.to_string())),
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
        let result = self.factory.pause(id, &spec, handle, memory);
        let (late, outcome, info) = {
            let mut table = self.lock();
            let (late, outcome) = table.paused(key, result, reason, self.clock.now_ms());
            self.changed.notify_all();
            (late, outcome, table.info(key))
        };
        if let Some(h) = late {
            self.stop(key, h);
        }
        self.start_queued();
        self.tell();
        outcome.map_err(|reason| ManagerError::PauseFailed {
            id: id.to_string(),
            reason,
        })?;
        info.ok_or_else(|| ManagerError::NotFound(id.to_string()))
    }

    /// Resumes a paused session: at once when a slot is free and nobody waits, else after the
    /// sessions queued before it (up to the queue's timeout, after which it stays paused).
    /// Returns once it runs again. Errors: an unknown session, one not paused, a full queue, a
    /// resume the factory could not do (the session stays paused, its reason says why).
    pub fn resume(&self, id: &str) -> Result<SessionInfo, ManagerError> {
        let admission = {
            let mut table = self.lock();
            let admission = table.resume(id, self.clock.now_ms())?;
            self.changed.notify_all();
            admission
        };
        self.tell();
        let outcome = match admission {
            Admission::Start(job) => self.run_job(job).1,
            Admission::Queued(_) => Ok(()),
        };
        self.start_queued();
        self.tell();
        outcome.map_err(|reason| ManagerError::ResumeFailed {
            id: id.to_string(),
            reason,
        })?;
        let queue_wait = Duration::from_millis(
            u64::try_from(self.lock().queue_timeout_ms()).unwrap_or(0) + 1000,
        );
        let info = self.wait_started(id, queue_wait)?;
        match info.state {
            SessionState::Running => Ok(info),
            SessionState::Paused => Err(ManagerError::ResumeFailed {
                id: id.to_string(),
                reason: info.reason.unwrap_or_default(),
            }),
            state => Err(ManagerError::NotRunning {
                id: id.to_string(),
                state,
            }),
        }
    }

    /// Registers a session paused (its state saved) before the server restarted, so that it is
    /// listed as paused and resumes. Errors: an id in use.
    pub fn adopt_paused(
        &self,
        id: String,
        spec: SessionSpec,
        created_ms: i64,
    ) -> Result<(), ManagerError> {
        self.lock()
            .adopt_paused(id, spec, created_ms, self.clock.now_ms())?;
        self.changed.notify_all();
        self.tell();
        Ok(())
    }

    /// Marks work in the session's box that does not hold its handle (a streaming command, a
    /// code execution): until [`SessionManager::end_work`], the box is not idle.
    pub fn begin_work(&self, id: &str) {
        self.lock().work(id, true, self.clock.now_ms());
    }

    /// Ends what [`SessionManager::begin_work`] began; the box's idle time counts from now.
    pub fn end_work(&self, id: &str) {
        self.lock().work(id, false, self.clock.now_ms());
    }

    /// The factory that starts and stops the boxes.
    pub fn factory(&self) -> &F {
        &self.factory
    }

    /// The session's spec, if it is known.
    pub fn spec(&self, id: &str) -> Option<SessionSpec> {
        self.lock().spec(id)
    }

    /// Housekeeping; call it periodically. Expires running boxes past their deadline (`Expired`),
    /// or pauses them when their spec says so, pauses idle boxes, fails queued sessions past
    /// theirs (`Failed`), marks boxes that ended on their own `Dead`, and starts queued sessions
    /// in order while slots are free.
    pub fn tick(&self) {
        let (mut to_stop, idle, to_pause) = {
            let mut table = self.lock();
            let now = self.clock.now_ms();
            let mut to_stop = Vec::new();
            let mut to_pause = Vec::new();
            for due in table.overdue(now) {
                match due {
                    Due::End(key, state, reason) => {
                        if let Ok(Some(h)) = table.end(key, state, &reason, now) {
                            to_stop.push((key, h));
                        }
                    }
                    Due::Pause(key, reason) => {
                        if let Some(info) = table.info(key) {
                            to_pause.push((info.id, reason));
                        }
                    }
                    Due::Unqueue(key, reason) => table.unqueue(key, reason),
                }
            }
            self.changed.notify_all();
            (to_stop, table.lend_idle(), to_pause)
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
                if let Some(h) = table.give_back(key, h, None) {
                    to_stop.push((key, h));
                }
            }
            self.changed.notify_all();
        }
        self.stop_all(to_stop);
        for (id, reason) in to_pause {
            match self.pause_with_reason(&id, true, &reason) {
                // Paused (or ended) by a request meanwhile.
                Ok(_) | Err(ManagerError::AlreadyPaused(_) | ManagerError::NotRunning { .. }) => {}
                Err(e) => eprintln!("airlock: cannot pause sandbox {id} ({reason}): {e}"),
            }
        }
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
            to_stop.extend(table.take_paused_for_shutdown());
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

    /// Starts or resumes one box and publishes the outcome: the record, and a resume's error.
    fn run_job(&self, job: Job<F::Handle>) -> (Option<SessionInfo>, Result<(), String>) {
        match job {
            Job::Start(job) => (self.start(job), Ok(())),
            Job::Resume(key, id, spec, resident) => {
                let result = self.factory.resume(&id, &spec, resident);
                let (late, outcome, info) = {
                    let mut table = self.lock();
                    let (late, outcome) = table.resumed(key, result, self.clock.now_ms());
                    self.changed.notify_all();
                    (late, outcome, table.info(key))
                };
                if let Some(h) = late {
                    self.stop(key, h);
                }
                (info, outcome)
            }
        }
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
                    let _ = self.run_job(job);
                }
                None => return,
            }
        }
    }

    /// Returns a lent handle; stops the box if its session ended meanwhile.
    fn give_back(&self, key: u64, handle: F::Handle) {
        let ended = {
            let mut table = self.lock();
            let ended = table.give_back(key, handle, Some(self.clock.now_ms()));
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
            self.observer.sessions_changed(&changes);
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
