//! What the session manager needs from outside: something that starts and stops boxes, a clock,
//! and someone to tell about changes (the server's store).

use super::{Paused, SessionInfo, SessionSpec};
use std::time::{SystemTime, UNIX_EPOCH};

/// Starts and stops the boxes of sessions. The manager never calls it with a lock held, so a slow
/// start or stop delays only the caller that triggered it.
pub trait BoxFactory: Send + Sync + 'static {
    /// A started box, owned by the manager until it is handed back to [`BoxFactory::stop`].
    type Handle: Send + 'static;

    /// Starts the box of session `id` (blocking). An error is the session's failure reason, so it
    /// should be a sentence a user can act on.
    fn start(&self, id: &str, spec: &SessionSpec) -> Result<Self::Handle, String>;

    /// Ends a box and frees what it holds (blocking). Called exactly once per started box.
    fn stop(&self, handle: Self::Handle);

    /// Whether the box is still alive; a `false` makes the session `Dead` (the box is then still
    /// handed to `stop` for cleanup). Should be quick: it runs for every idle box on each tick.
    fn alive(&self, handle: &mut Self::Handle) -> bool;

    /// Pauses the box of session `id` (blocking): `memory` asks that its processes continue
    /// where they were on resume. On refusal the handle comes back, the box still running, with
    /// a sentence saying why.
    fn pause(
        &self,
        id: &str,
        spec: &SessionSpec,
        handle: Self::Handle,
        memory: bool,
    ) -> Result<Paused<Self::Handle>, (Self::Handle, String)> {
        let _ = (id, spec, memory);
        Err((handle, "this server cannot pause boxes".into()))
    }

    /// Continues the box of session `id` (blocking): the `resident` handle a pause kept, or
    /// (`None`) a new box from what the pause saved. On failure the resident handle comes back
    /// (the session stays paused), with a sentence saying why.
    fn resume(
        &self,
        id: &str,
        spec: &SessionSpec,
        resident: Option<Self::Handle>,
    ) -> Result<Self::Handle, (Option<Self::Handle>, String)> {
        let _ = (id, spec);
        Err((resident, "this server cannot resume boxes".into()))
    }
}

/// The time, in milliseconds; the manager measures every deadline with it.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// Wall-clock milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            // A clock set before 1970: report the offset as a negative time.
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// Told about every change of a session's record: its creation, each state change and each new
/// deadline. Calls come in the order the changes happened, one call at a time (a call may carry
/// several changes, see [`SessionObserver::sessions_changed`]), without any manager lock held;
/// a manager method that changed a session returns only after the observer has been told. The
/// observer must not call the manager's methods that change sessions (it may `get`).
pub trait SessionObserver: Send + Sync {
    fn session_changed(&self, info: &SessionInfo);

    /// Several changes told together, in the order they happened (a create that started at
    /// once: `starting`, then `running`). An observer that records them may do so in one
    /// write; by default, one call of [`SessionObserver::session_changed`] each.
    fn sessions_changed(&self, infos: &[SessionInfo]) {
        for info in infos {
            self.session_changed(info);
        }
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopObserver;

impl SessionObserver for NoopObserver {
    fn session_changed(&self, _info: &SessionInfo) {}
}
