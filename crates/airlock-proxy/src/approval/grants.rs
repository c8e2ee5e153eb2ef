//! The grants approvals made, live in the proxy until their time or byte budget runs out or
//! the box ends (they are never written anywhere by the proxy).

use super::answer::Answer;
use super::askable::GrantTarget;
use crate::rules::Host;
use airlock_policy::ApprovalScope;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One grant an answer made.
#[derive(Debug)]
pub struct Grant {
    /// The approval request that made it.
    pub id: u64,
    pub target: GrantTarget,
    /// Who said yes.
    pub by: String,
    pub scope: ApprovalScope,
    expires: Option<Instant>,
    /// When it ends (milliseconds since the Unix epoch); `None`: with the box.
    pub expires_ms: Option<u128>,
    /// Bytes (both directions, all its connections) it may move; `None`: the box's budget only.
    pub byte_budget: Option<u64>,
    /// Bytes its connections have moved (or reserved while moving).
    pub(crate) used: AtomicU64,
}

impl Grant {
    /// The grant `answer` makes for request `id`, starting `now`.
    pub fn new(id: u64, target: GrantTarget, answer: &Answer, now: Instant) -> Grant {
        let ttl = answer.ttl.filter(|_| answer.scope != ApprovalScope::Once);
        Grant {
            id,
            target,
            by: answer.by.clone(),
            scope: answer.scope,
            expires: ttl.map(|t| now + t),
            expires_ms: ttl.map(|t| epoch_ms(SystemTime::now() + t)),
            byte_budget: answer.byte_budget,
            used: AtomicU64::new(0),
        }
    }

    /// Whether it still allows new connections at `now`.
    pub fn is_live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|e| now < e)
            && self
                .byte_budget
                .is_none_or(|b| self.used.load(Ordering::Acquire) < b)
    }

    /// Bytes its connections have moved.
    pub fn bytes_used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// How long it has left at `now`; `None`: no time limit.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.expires.map(|e| e.saturating_duration_since(now))
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn epoch_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The live grants of one box.
#[derive(Debug, Default)]
pub struct Grants {
    list: Mutex<Vec<Arc<Grant>>>,
}

impl Grants {
    /// Adds a grant (scopes `run` and `save`).
    pub fn add(&self, grant: Arc<Grant>) {
        if let Ok(mut l) = self.list.lock() {
            l.push(grant);
        }
    }

    /// The newest live grant covering `host`:`port`, and the grants found ended at `now`
    /// (removed, so each is reported once).
    pub fn find(
        &self,
        host: &Host,
        port: u16,
        now: Instant,
    ) -> (Option<Arc<Grant>>, Vec<Arc<Grant>>) {
        let Ok(mut l) = self.list.lock() else {
            return (None, Vec::new());
        };
        let (live, ended): (Vec<_>, Vec<_>) = l.drain(..).partition(|g| g.is_live(now));
        *l = live;
        let found = l
            .iter()
            .rev()
            .find(|g| g.target.covers(host, port))
            .cloned();
        (found, ended)
    }

    /// The grants not known to have ended.
    pub fn list(&self) -> Vec<Arc<Grant>> {
        self.list.lock().map(|l| l.clone()).unwrap_or_default()
    }
}
