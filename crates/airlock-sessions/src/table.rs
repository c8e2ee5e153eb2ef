//! The manager's bookkeeping: every session's record, the FIFO queue, the slot count and the
//! changes not yet told to the observer. It makes decisions only; it never starts or stops a box
//! and never waits, so the manager can hold it under its lock for short moments.
//!
//! Slots: a session holds one from the moment it leaves the queue until its box has been stopped
//! (or failed to start), so the number of boxes alive never exceeds `max_running`. A paused box
//! gives its slot back; resuming takes one again, through the queue when none is free.

use super::{
    ManagerConfig, ManagerError, OnTimeout, Paused, SessionInfo, SessionSpec, SessionState,
};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Where a session's box is. Every variant but `Empty` holds a slot.
pub(super) enum BoxSlot<H> {
    /// No box: queued, or ended and cleaned up.
    Empty,
    /// Some thread is starting the box.
    Starting,
    /// The box is up and nobody uses its handle.
    Ready(Box<H>),
    /// Some thread has the handle (an operation, or a liveness check).
    Lent,
    /// Some thread is stopping the box.
    Stopping,
    /// The box is paused and holds no slot: its handle when it was frozen in place, `None` when
    /// its state was saved and the box ended.
    Paused(Option<Box<H>>),
}

/// One session. The box's handle and the spec are boxed: ended records (ten thousand are kept)
/// then cost their own fields, not the size of a running box's.
struct Record<H> {
    id: String,
    spec: Box<SessionSpec>,
    state: SessionState,
    reason: Option<String>,
    created_ms: i64,
    started_ms: Option<i64>,
    deadline_ms: i64,
    ended_ms: Option<i64>,
    /// The box's life: the spec's timeout, then the last `set_timeout`.
    life_ms: i64,
    slot: BoxSlot<H>,
    /// In `ended` (terminal and without a box).
    retired: bool,
    /// When a request last used the box (or it started or resumed).
    last_active_ms: i64,
    /// Commands and requests running in the box now; an idle pause waits until there are none.
    busy: u32,
    /// A retired record's labels (its spec's metadata moved here): a `BTreeMap`'s first node
    /// has room for eleven pairs, about half a kilobyte even for one label, and ten thousand
    /// ended records are kept. Empty (no allocation) until the record retires.
    ended_labels: Box<[(Box<str>, Box<str>)]>,
}

impl<H> Record<H> {
    /// The session's labels, wherever they are kept.
    fn metadata(&self) -> BTreeMap<String, String> {
        match self.retired {
            true => self
                .ended_labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            false => self.spec.metadata.clone(),
        }
    }

    /// Whether the session has label `key` = `value`.
    fn has_label(&self, key: &str, value: &str) -> bool {
        match self.retired {
            true => self
                .ended_labels
                .iter()
                .any(|(k, v)| &**k == key && &**v == value),
            false => self.spec.metadata.get(key).map(String::as_str) == Some(value),
        }
    }
}

/// What a new session (or a resume) got.
pub(super) enum Admission<H> {
    /// It holds a slot; the caller starts (or resumes) its box.
    Start(Job<H>),
    /// It waits in the queue.
    Queued(u64),
}

/// Work for a session that holds a slot.
pub(super) enum Job<H> {
    /// Start a new box.
    Start(StartJob),
    /// Resume a paused box: the session's key, id, spec and the handle its pause kept.
    Resume(u64, String, SessionSpec, Option<H>),
}

/// What a housekeeping pass found due.
pub(super) enum Due {
    /// End the session with this state and reason.
    End(u64, SessionState, String),
    /// Pause the running box (its timeout says so, or it is idle), with the reason.
    Pause(u64, String),
    /// A resume waited too long for a slot: the session stays paused.
    Unqueue(u64, String),
}

/// Why a handle could not be lent.
pub(super) enum LendRefusal {
    /// Another thread has it; wait for it to come back.
    Busy,
    Refused(ManagerError),
}

/// A box to start: the session's key, id and spec.
pub(super) type StartJob = (u64, String, SessionSpec);

pub(super) struct Table<H> {
    config: ManagerConfig,
    /// Keyed by creation order.
    records: BTreeMap<u64, Record<H>>,
    by_id: HashMap<String, u64>,
    queue: VecDeque<u64>,
    /// Ended sessions without a box, oldest first; forgotten beyond `keep_ended`.
    ended: VecDeque<u64>,
    occupied: usize,
    next_key: u64,
    outbox: Vec<SessionInfo>,
    shutting_down: bool,
}

impl<H> Table<H> {
    pub(super) fn new(config: ManagerConfig) -> Table<H> {
        Table {
            config,
            records: BTreeMap::new(),
            by_id: HashMap::new(),
            queue: VecDeque::new(),
            ended: VecDeque::new(),
            occupied: 0,
            next_key: 0,
            outbox: Vec::new(),
            shutting_down: false,
        }
    }

    pub(super) fn key(&self, id: &str) -> Result<u64, ManagerError> {
        self.by_id
            .get(id)
            .copied()
            .ok_or_else(|| ManagerError::NotFound(id.to_string()))
    }

    /// How long a session may wait in the queue.
    pub(super) fn queue_timeout_ms(&self) -> i64 {
        self.config.queue_timeout_ms
    }

    /// Boxes holding a slot.
    pub(super) fn occupied(&self) -> usize {
        self.occupied
    }

    pub(super) fn get(&self, id: &str) -> Option<SessionInfo> {
        self.by_id.get(id).and_then(|k| self.info(*k))
    }

    pub(super) fn info(&self, key: u64) -> Option<SessionInfo> {
        let position = self.queue.iter().position(|k| *k == key).map(|p| p + 1);
        self.records.get(&key).map(|r| public(r, position))
    }

    /// Sessions in any of `states` (all when empty) whose metadata has every pair of `metadata`,
    /// in creation order.
    pub(super) fn list(
        &self,
        states: &[SessionState],
        metadata: &BTreeMap<String, String>,
    ) -> Vec<SessionInfo> {
        let positions: HashMap<u64, usize> = self
            .queue
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, i + 1))
            .collect();
        self.records
            .iter()
            .filter(|(_, r)| states.is_empty() || states.contains(&r.state))
            .filter(|(_, r)| metadata.iter().all(|(k, v)| r.has_label(k, v)))
            .map(|(k, r)| public(r, positions.get(k).copied()))
            .collect()
    }

    /// Registers a session: it takes a free slot if nobody waits before it, else joins the queue.
    pub(super) fn admit(
        &mut self,
        id: String,
        spec: SessionSpec,
        now: i64,
    ) -> Result<Admission<H>, ManagerError> {
        if self.shutting_down {
            return Err(ManagerError::ShuttingDown);
        }
        if self.by_id.contains_key(&id) {
            return Err(ManagerError::AlreadyExists(id));
        }
        let life_ms = match spec.timeout_ms {
            None => self.config.default_timeout_ms,
            Some(t) => self.check_timeout(t)?,
        };
        let start_now = self.queue.is_empty() && self.occupied < self.config.max_running;
        if !start_now && self.queue.len() >= self.config.max_queued {
            return Err(ManagerError::QueueFull {
                max_running: self.config.max_running,
                max_queued: self.config.max_queued,
            });
        }
        let key = self.next_key;
        self.next_key += 1;
        let mut record = Record {
            id: id.clone(),
            spec: Box::new(spec),
            state: SessionState::Queued,
            reason: None,
            created_ms: now,
            started_ms: None,
            deadline_ms: now.saturating_add(self.config.queue_timeout_ms),
            ended_ms: None,
            life_ms,
            slot: BoxSlot::Empty,
            retired: false,
            last_active_ms: now,
            busy: 0,
            ended_labels: Box::default(),
        };
        let admission = if start_now {
            take_slot(&mut record, now);
            self.occupied += 1;
            Admission::Start(Job::Start((key, id.clone(), (*record.spec).clone())))
        } else {
            self.queue.push_back(key);
            Admission::Queued(key)
        };
        self.records.insert(key, record);
        self.by_id.insert(id, key);
        self.changed(key);
        Ok(admission)
    }

    /// Moves the head of the queue to `Starting` (or a queued resume on to resuming its box) if a
    /// slot is free.
    pub(super) fn next_start(&mut self, now: i64) -> Option<Job<H>> {
        if self.shutting_down || self.occupied >= self.config.max_running {
            return None;
        }
        let key = self.queue.pop_front()?;
        let r = self.records.get_mut(&key)?;
        let job = if r.state == SessionState::Resuming {
            let resident = match std::mem::replace(&mut r.slot, BoxSlot::Starting) {
                BoxSlot::Paused(h) => h.map(|h| *h),
                _ => None,
            };
            Job::Resume(key, r.id.clone(), (*r.spec).clone(), resident)
        } else {
            take_slot(r, now);
            Job::Start((key, r.id.clone(), (*r.spec).clone()))
        };
        self.occupied += 1;
        self.changed(key);
        Some(job)
    }

    /// Asks to resume a paused session: it takes a free slot if nobody waits before it, else
    /// joins the queue (its deadline then says by when it must have a slot).
    pub(super) fn resume(&mut self, id: &str, now: i64) -> Result<Admission<H>, ManagerError> {
        if self.shutting_down {
            return Err(ManagerError::ShuttingDown);
        }
        let key = self.key(id)?;
        let start_now = self.queue.is_empty() && self.occupied < self.config.max_running;
        let queue_full = self.queue.len() >= self.config.max_queued;
        let (max_running, max_queued, queue_timeout) = (
            self.config.max_running,
            self.config.max_queued,
            self.config.queue_timeout_ms,
        );
        let r = self
            .records
            .get_mut(&key)
            .ok_or_else(|| ManagerError::NotFound(id.to_string()))?;
        if r.state != SessionState::Paused {
            return Err(ManagerError::NotPaused {
                id: id.to_string(),
                state: r.state,
            });
        }
        if !start_now && queue_full {
            return Err(ManagerError::QueueFull {
                max_running,
                max_queued,
            });
        }
        r.state = SessionState::Resuming;
        r.reason = None;
        let admission = if start_now {
            let resident = match std::mem::replace(&mut r.slot, BoxSlot::Starting) {
                BoxSlot::Paused(h) => h.map(|h| *h),
                _ => None,
            };
            self.occupied += 1;
            Admission::Start(Job::Resume(key, r.id.clone(), (*r.spec).clone(), resident))
        } else {
            r.deadline_ms = now.saturating_add(queue_timeout);
            self.queue.push_back(key);
            Admission::Queued(key)
        };
        self.changed(key);
        Ok(admission)
    }

    /// Records how a resume went. Returns the handle when the session ended meanwhile (the
    /// caller stops it, then calls [`Table::release`]); on failure the session is paused again
    /// with the reason, and the error is returned.
    pub(super) fn resumed(
        &mut self,
        key: u64,
        result: Result<H, (Option<H>, String)>,
        now: i64,
    ) -> (Option<H>, Result<(), String>) {
        let Some(r) = self.records.get_mut(&key) else {
            return (result.ok(), Ok(()));
        };
        let ended = r.state.is_terminal();
        let outcome = match result {
            Ok(h) if ended => {
                r.slot = BoxSlot::Stopping;
                return (Some(h), Ok(()));
            }
            Err((Some(h), _)) if ended => {
                r.slot = BoxSlot::Stopping;
                return (Some(h), Ok(()));
            }
            Ok(h) => {
                r.slot = BoxSlot::Ready(Box::new(h));
                r.state = SessionState::Running;
                r.deadline_ms = now.saturating_add(r.life_ms);
                r.last_active_ms = now;
                Ok(())
            }
            Err((resident, message)) => {
                self.occupied -= 1;
                if ended {
                    r.slot = BoxSlot::Empty;
                } else {
                    r.slot = BoxSlot::Paused(resident.map(Box::new));
                    r.state = SessionState::Paused;
                    r.reason = Some(format!("the last resume failed: {message}"));
                }
                Err(message)
            }
        };
        self.changed(key);
        self.retire(key);
        (None, outcome)
    }

    /// Records how a pause of a lent handle went. Returns the handle when the session ended
    /// meanwhile (the caller stops it, then calls [`Table::release`]); on refusal the box runs on
    /// and the error is returned.
    pub(super) fn paused(
        &mut self,
        key: u64,
        result: Result<Paused<H>, (H, String)>,
        reason: &str,
        now: i64,
    ) -> (Option<H>, Result<(), String>) {
        let Some(r) = self.records.get_mut(&key) else {
            return (None, Ok(()));
        };
        let ended = r.state.is_terminal();
        let outcome = match result {
            Err((h, message)) => {
                if ended {
                    r.slot = BoxSlot::Stopping;
                    return (Some(h), Ok(()));
                }
                r.slot = BoxSlot::Ready(Box::new(h));
                return (None, Err(message));
            }
            Ok(Paused::Resident(h)) if ended => {
                r.slot = BoxSlot::Stopping;
                return (Some(h), Ok(()));
            }
            Ok(paused) => {
                self.occupied -= 1;
                if ended {
                    r.slot = BoxSlot::Empty;
                } else {
                    r.slot = BoxSlot::Paused(match paused {
                        Paused::Resident(h) => Some(Box::new(h)),
                        Paused::Saved => None,
                    });
                    r.state = SessionState::Paused;
                    r.reason = Some(reason.to_string());
                    r.last_active_ms = now;
                }
                Ok(())
            }
        };
        self.changed(key);
        self.retire(key);
        (None, outcome)
    }

    /// Registers a session that was paused, with its state saved, before the server restarted.
    pub(super) fn adopt_paused(
        &mut self,
        id: String,
        spec: SessionSpec,
        created_ms: i64,
        now: i64,
    ) -> Result<(), ManagerError> {
        if self.by_id.contains_key(&id) {
            return Err(ManagerError::AlreadyExists(id));
        }
        let life_ms = match spec.timeout_ms {
            Some(t) if t > 0 && t <= self.config.max_timeout_ms => t,
            _ => self.config.default_timeout_ms,
        };
        let key = self.next_key;
        self.next_key += 1;
        self.records.insert(
            key,
            Record {
                id: id.clone(),
                spec: Box::new(spec),
                state: SessionState::Paused,
                reason: Some("paused before the server restarted".into()),
                created_ms,
                started_ms: None,
                deadline_ms: now.saturating_add(life_ms),
                ended_ms: None,
                life_ms,
                slot: BoxSlot::Paused(None),
                retired: false,
                last_active_ms: now,
                busy: 0,
                ended_labels: Box::default(),
            },
        );
        self.by_id.insert(id, key);
        self.changed(key);
        Ok(())
    }

    /// Marks the start (`true`) or the end of work in a session's box: a request or a command.
    /// Unknown sessions are ignored.
    pub(super) fn work(&mut self, id: &str, begins: bool, now: i64) {
        if let Some(r) = self.by_id.get(id).and_then(|k| self.records.get_mut(k)) {
            r.last_active_ms = now;
            if begins {
                r.busy += 1;
            } else {
                r.busy = r.busy.saturating_sub(1);
            }
        }
    }

    /// The spec of a session, if known.
    pub(super) fn spec(&self, id: &str) -> Option<SessionSpec> {
        self.by_id
            .get(id)
            .and_then(|k| self.records.get(k))
            .map(|r| {
                let mut spec = (*r.spec).clone();
                spec.metadata = r.metadata();
                spec
            })
    }

    /// Records how a start went. Returns the handle when the session ended meanwhile: the caller
    /// stops it, then calls [`Table::release`].
    pub(super) fn started(&mut self, key: u64, result: Result<H, String>, now: i64) -> Option<H> {
        let r = self.records.get_mut(&key)?;
        let ended = r.state.is_terminal();
        match result {
            Ok(h) if ended => {
                r.slot = BoxSlot::Stopping;
                return Some(h);
            }
            Ok(h) => {
                r.slot = BoxSlot::Ready(Box::new(h));
                r.state = SessionState::Running;
                // Its life counts from when it runs: a slow start (a VM restoring, a busy
                // host) must not eat the lifetime the caller asked for.
                r.deadline_ms = now.saturating_add(r.life_ms);
                // Idle time counts from when it runs too (a slow start is not idleness).
                r.last_active_ms = now;
            }
            Err(message) => {
                r.slot = BoxSlot::Empty;
                self.occupied -= 1;
                if !ended {
                    finish(r, SessionState::Failed, message, now);
                }
            }
        }
        self.changed(key);
        self.retire(key);
        None
    }

    /// Frees the slot of a box that has been stopped.
    pub(super) fn release(&mut self, key: u64) {
        if let Some(r) = self.records.get_mut(&key) {
            if !matches!(r.slot, BoxSlot::Empty) {
                r.slot = BoxSlot::Empty;
                self.occupied -= 1;
            }
            self.retire(key);
        }
    }

    /// Ends a live session with `state` and `reason`. Returns its handle when the caller must stop
    /// it (then [`Table::release`]); a box being started or used is stopped by that thread instead.
    pub(super) fn end(
        &mut self,
        key: u64,
        state: SessionState,
        reason: &str,
        now: i64,
    ) -> Result<Option<H>, ManagerError> {
        let r = self
            .records
            .get_mut(&key)
            .ok_or_else(|| ManagerError::NotFound(key.to_string()))?;
        if r.state.is_terminal() {
            return Err(ManagerError::NotRunning {
                id: r.id.clone(),
                state: r.state,
            });
        }
        finish(r, state, reason.to_string(), now);
        let handle = match std::mem::replace(&mut r.slot, BoxSlot::Empty) {
            BoxSlot::Ready(h) => {
                r.slot = BoxSlot::Stopping;
                Some(*h)
            }
            // A frozen box takes a slot again while it is stopped (release frees it).
            BoxSlot::Paused(Some(h)) => {
                r.slot = BoxSlot::Stopping;
                self.occupied += 1;
                Some(*h)
            }
            BoxSlot::Paused(None) => None,
            other => {
                r.slot = other;
                None
            }
        };
        self.queue.retain(|k| *k != key);
        self.changed(key);
        self.retire(key);
        Ok(handle)
    }

    /// Lends the handle of a running session; `work`: the lender uses the box (it is busy until
    /// the handle comes back with [`Table::give_back`]`(…, Some(now))`), else it only looks.
    pub(super) fn lend(&mut self, id: &str, work: bool) -> Result<(u64, H), LendRefusal> {
        let key = self.key(id).map_err(LendRefusal::Refused)?;
        let r = self
            .records
            .get_mut(&key)
            .ok_or_else(|| LendRefusal::Refused(ManagerError::NotFound(id.to_string())))?;
        if r.state != SessionState::Running {
            return Err(LendRefusal::Refused(ManagerError::NotRunning {
                id: id.to_string(),
                state: r.state,
            }));
        }
        match std::mem::replace(&mut r.slot, BoxSlot::Lent) {
            BoxSlot::Ready(h) => {
                if work {
                    r.busy += 1;
                }
                Ok((key, *h))
            }
            other => {
                r.slot = other;
                Err(LendRefusal::Busy)
            }
        }
    }

    /// Lends the handles of every running session nobody uses (for liveness checks).
    pub(super) fn lend_idle(&mut self) -> Vec<(u64, H)> {
        let mut out = Vec::new();
        for (key, r) in self.records.iter_mut() {
            if r.state == SessionState::Running && matches!(r.slot, BoxSlot::Ready(_)) {
                if let BoxSlot::Ready(h) = std::mem::replace(&mut r.slot, BoxSlot::Lent) {
                    out.push((*key, *h));
                }
            }
        }
        out
    }

    /// Takes back a handle lent by [`Table::lend`] (`used`: it served a request) or
    /// [`Table::lend_idle`]. Returns it when the session ended meanwhile: the caller stops it,
    /// then calls [`Table::release`].
    pub(super) fn give_back(&mut self, key: u64, handle: H, used: Option<i64>) -> Option<H> {
        if let (Some(r), Some(now)) = (self.records.get_mut(&key), used) {
            r.busy = r.busy.saturating_sub(1);
            r.last_active_ms = now;
        }
        match self.records.get_mut(&key) {
            Some(r) if !r.state.is_terminal() => {
                r.slot = BoxSlot::Ready(Box::new(handle));
                None
            }
            Some(r) => {
                r.slot = BoxSlot::Stopping;
                Some(handle)
            }
            None => Some(handle),
        }
    }

    /// Sets a live session's box life to `timeout_ms` from now (from its start, if queued).
    pub(super) fn set_timeout(
        &mut self,
        id: &str,
        timeout_ms: i64,
        now: i64,
    ) -> Result<u64, ManagerError> {
        let key = self.key(id)?;
        let timeout_ms = self.check_timeout(timeout_ms)?;
        let r = self
            .records
            .get_mut(&key)
            .ok_or_else(|| ManagerError::NotFound(id.to_string()))?;
        match r.state {
            SessionState::Queued | SessionState::Paused | SessionState::Resuming => {
                r.life_ms = timeout_ms
            }
            SessionState::Starting | SessionState::Running => {
                r.life_ms = timeout_ms;
                r.deadline_ms = now.saturating_add(timeout_ms);
            }
            state => {
                return Err(ManagerError::NotRunning {
                    id: id.to_string(),
                    state,
                })
            }
        }
        self.changed(key);
        Ok(key)
    }

    /// Running sessions past their deadline (or idle long enough to be paused), and queued ones
    /// past theirs, with what they become.
    pub(super) fn overdue(&self, now: i64) -> Vec<Due> {
        let mut out = Vec::new();
        for (key, r) in &self.records {
            if r.state == SessionState::Running && now < r.deadline_ms {
                let idle_ms = match r.spec.idle_pause_ms {
                    Some(0) => None,
                    Some(ms) => Some(ms),
                    None => self.config.idle_pause_ms,
                };
                if let Some(idle_ms) = idle_ms {
                    if r.busy == 0 && now.saturating_sub(r.last_active_ms) >= idle_ms {
                        out.push(Due::Pause(*key, format!("idle for {}", seconds(idle_ms))));
                    }
                }
                continue;
            }
            if now < r.deadline_ms {
                continue;
            }
            match r.state {
                SessionState::Running if r.spec.on_timeout == OnTimeout::Pause => {
                    out.push(Due::Pause(
                        *key,
                        format!("timeout of {} reached", seconds(r.life_ms)),
                    ));
                }
                SessionState::Running => {
                    out.push(Due::End(
                        *key,
                        SessionState::Expired,
                        format!("timeout of {} reached", seconds(r.life_ms)),
                    ));
                }
                SessionState::Resuming if self.queue.contains(key) => out.push(Due::Unqueue(
                    *key,
                    format!(
                        "the resume waited {} in the queue without a free slot; it stays paused",
                        seconds(self.config.queue_timeout_ms)
                    ),
                )),
                SessionState::Queued => out.push(Due::End(
                    *key,
                    SessionState::Failed,
                    format!(
                        "waited {} in the queue without a free slot ({} boxes may run at once)",
                        seconds(self.config.queue_timeout_ms),
                        self.config.max_running
                    ),
                )),
                _ => {}
            }
        }
        out
    }

    /// Takes a resume that waited too long out of the queue: the session is paused again.
    pub(super) fn unqueue(&mut self, key: u64, reason: String) {
        if let Some(r) = self.records.get_mut(&key) {
            if r.state == SessionState::Resuming && self.queue.contains(&key) {
                self.queue.retain(|k| *k != key);
                r.state = SessionState::Paused;
                r.reason = Some(reason);
                self.changed(key);
            }
        }
    }

    /// For a shutdown: the handles of paused boxes that were frozen in place, to stop. Their
    /// sessions stay paused (what their pause saved outlives the server); every paused session
    /// is left out of [`Table::live`] from now on.
    pub(super) fn take_paused_for_shutdown(&mut self) -> Vec<(u64, H)> {
        let mut out = Vec::new();
        for (key, r) in self.records.iter_mut() {
            if r.state != SessionState::Paused {
                continue;
            }
            if let BoxSlot::Paused(Some(h)) = std::mem::replace(&mut r.slot, BoxSlot::Empty) {
                r.slot = BoxSlot::Stopping;
                self.occupied += 1;
                out.push((*key, *h));
            }
        }
        out
    }

    /// Refuses new sessions and stops starting queued ones.
    pub(super) fn close(&mut self) {
        self.shutting_down = true;
    }

    /// Every live session's key but the paused ones.
    pub(super) fn live(&self) -> Vec<u64> {
        self.records
            .iter()
            .filter(|(_, r)| !r.state.is_terminal() && r.state != SessionState::Paused)
            .map(|(k, _)| *k)
            .collect()
    }

    /// The changes not yet told to the observer, oldest first.
    pub(super) fn take_changes(&mut self) -> Vec<SessionInfo> {
        std::mem::take(&mut self.outbox)
    }

    fn check_timeout(&self, timeout_ms: i64) -> Result<i64, ManagerError> {
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(ManagerError::InvalidTimeout {
                requested_ms: timeout_ms,
                max_ms: self.config.max_timeout_ms,
            });
        }
        Ok(timeout_ms)
    }

    fn changed(&mut self, key: u64) {
        if let Some(info) = self.info(key) {
            self.outbox.push(info);
        }
    }

    /// Files `key` among the ended once it is terminal and boxless.
    fn retire(&mut self, key: u64) {
        let Some(r) = self.records.get_mut(&key) else {
            return;
        };
        if r.retired || !r.state.is_terminal() || !matches!(r.slot, BoxSlot::Empty) {
            return;
        }
        // What only a box needs (the factory's payload: the whole policy) goes now; the
        // record keeps what the views show, compactly. Ten thousand of these are kept.
        r.spec.payload = serde_json::Value::Null;
        r.spec.restore = None;
        r.ended_labels = std::mem::take(&mut r.spec.metadata)
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
            .collect();
        r.id.shrink_to_fit();
        if let Some(reason) = r.reason.as_mut() {
            reason.shrink_to_fit();
        }
        r.retired = true;
        self.ended.push_back(key);
        while self.ended.len() > self.config.keep_ended {
            let Some(old) = self.ended.pop_front() else {
                break;
            };
            if let Some(gone) = self.records.remove(&old) {
                self.by_id.remove(&gone.id);
            }
        }
    }
}

/// Marks a record as holding a slot from `now`; its box lives `life_ms` from then.
fn take_slot<H>(r: &mut Record<H>, now: i64) {
    r.state = SessionState::Starting;
    r.slot = BoxSlot::Starting;
    r.started_ms = Some(now);
    r.deadline_ms = now.saturating_add(r.life_ms);
}

fn finish<H>(r: &mut Record<H>, state: SessionState, reason: String, now: i64) {
    r.state = state;
    r.reason = Some(reason);
    r.ended_ms = Some(now);
}

fn public<H>(r: &Record<H>, queue_position: Option<usize>) -> SessionInfo {
    SessionInfo {
        id: r.id.clone(),
        template: r.spec.template.clone(),
        metadata: r.metadata(),
        state: r.state,
        reason: r.reason.clone(),
        created_ms: r.created_ms,
        started_ms: r.started_ms,
        deadline_ms: r.deadline_ms,
        ended_ms: r.ended_ms,
        queue_position,
    }
}

/// "300 s", "1.5 s".
fn seconds(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
