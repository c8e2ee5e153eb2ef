//! envd's directory watching on the box's agent: `WatchDir` streams changes (async SDKs);
//! `CreateWatcher` / `GetWatcherEvents` / `RemoveWatcher` hold a watcher between polls (the sync
//! Python SDK). Each watch has an agent session of its own; a stream whose client leaves, or a
//! removed watcher, drops it and the agent stops watching. The envd router puts the
//! access-token check in front of these routes.

use super::boxio::with_box;
use super::boxstate::E2bBox;
use super::connect::{
    parse_stream_request, parse_unary, stream_error, stream_response, unary_error, unary_ok,
};
use super::error::E2bError;
use super::filesystem::entry_info;
use crate::state::AppState;
use airlock_runtime::{AgentChannel, EntryKind, FsChange, FsEventKind};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Events a polled watcher keeps between polls; older ones are dropped beyond it.
const MAX_PENDING: usize = 10_000;
/// Watchers per box.
const MAX_WATCHERS: usize = 256;
/// How often a watch looks at whether its client is still there.
const POLL: Duration = Duration::from_millis(250);
/// How often a polled watcher looks for polls waiting on it.
const POLLED_TICK: Duration = Duration::from_millis(20);
/// Longest a poll waits for its watcher to catch up with the agent.
const SYNC_LIMIT: Duration = Duration::from_secs(5);
/// Keepalive interval of a `WatchDir` stream.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// The watch routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/filesystem.Filesystem/WatchDir", post(watch_dir))
        .route("/filesystem.Filesystem/CreateWatcher", post(create_watcher))
        .route(
            "/filesystem.Filesystem/GetWatcherEvents",
            post(get_watcher_events),
        )
        .route("/filesystem.Filesystem/RemoveWatcher", post(remove_watcher))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatchRequest {
    #[serde(default)]
    path: String,
    #[serde(default)]
    recursive: bool,
    #[serde(default)]
    include_entry: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatcherRequest {
    #[serde(default)]
    watcher_id: String,
}

/// A watcher held between polls.
struct Polled {
    events: Mutex<VecDeque<Value>>,
    stop: AtomicBool,
    /// Polls waiting for the watcher to catch up: each is answered once every event of a
    /// change made before the poll arrived is in `events`.
    syncs: Mutex<Vec<oneshot::Sender<()>>>,
}

impl Polled {
    fn push(&self, ev: Value) {
        let mut q = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if q.len() >= MAX_PENDING {
            q.pop_front();
        }
        q.push_back(ev);
    }

    fn take_syncs(&self) -> Vec<oneshot::Sender<()>> {
        std::mem::take(&mut *self.syncs.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The polled watchers of one box.
#[derive(Default)]
pub(crate) struct Watchers {
    by_id: Mutex<HashMap<String, Arc<Polled>>>,
    next: Mutex<u64>,
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Polled>>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        for w in self.lock().values() {
            w.stop.store(true, Ordering::Release);
        }
    }
}

fn kind_name(kind: FsEventKind) -> Option<&'static str> {
    match kind {
        FsEventKind::Create => Some("EVENT_TYPE_CREATE"),
        FsEventKind::Write => Some("EVENT_TYPE_WRITE"),
        FsEventKind::Remove => Some("EVENT_TYPE_REMOVE"),
        FsEventKind::Rename => Some("EVENT_TYPE_RENAME"),
        FsEventKind::Chmod => Some("EVENT_TYPE_CHMOD"),
        FsEventKind::Overflow => None,
    }
}

/// `path` relative to the watched directory `root` (envd's event `name`).
fn relative(root: &str, path: &str) -> String {
    let root = root.trim_end_matches('/');
    match path.strip_prefix(root) {
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/').to_string(),
        _ => path.rsplit('/').next().unwrap_or(path).to_string(),
    }
}

/// envd's `FilesystemEvent` for one change (`None` for what envd has no event type for).
fn fs_event(
    session: &mut AgentChannel,
    root: &str,
    change: &FsChange,
    include_entry: bool,
) -> Option<Value> {
    let kind = kind_name(change.kind)?;
    let mut ev = json!({"name": relative(root, &change.path), "type": kind});
    if include_entry && !matches!(change.kind, FsEventKind::Remove) {
        if let Ok(entry) = session.stat(&change.path) {
            ev["entry"] = entry_info(&super::filesystem::described(session, entry));
        }
    }
    Some(ev)
}

/// Starts a watch on a session of its own; answers the session, the watch id and the resolved
/// path (a missing or non-directory path answers `not_found` / `invalid_argument`).
async fn open_watch(
    state: &AppState,
    id: &str,
    user: super::auth::E2bUser,
    req: &WatchRequest,
) -> Result<(AgentChannel, Arc<E2bBox>, u32, String), E2bError> {
    if req.path.is_empty() {
        return Err(E2bError::InvalidArgument(
            "path is empty: give the directory to watch".into(),
        ));
    }
    let path = super::auth::resolve_path_as(user, &req.path)?;
    let (e2b, key) = (Arc::clone(&state.e2b), id.to_string());
    let (mut session, boxed) = with_box(state, id, move |h| {
        Ok((h.sandbox().new_channel(), e2b.box_state(&key)))
    })
    .await?;
    let recursive = req.recursive;
    let (watch, session, path) = tokio::task::spawn_blocking(move || {
        let entry = session.stat(&path).map_err(E2bError::from)?;
        if entry.kind != EntryKind::Dir {
            return Err(E2bError::InvalidArgument(format!(
                "{path} is not a directory; watch a directory"
            )));
        }
        let w = session.watch(&path, recursive).map_err(E2bError::from)?;
        Ok((w, session, path))
    })
    .await
    .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))??;
    Ok((session, boxed, watch, path))
}

async fn watch_dir(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        let id = super::named_sandbox(&headers)?;
        let req: WatchRequest = parse_stream_request(&headers, body).await?;
        let include = req.include_entry;
        let (mut session, _boxed, watch, root) =
            open_watch(&state, &id, super::auth::user_from_headers(&headers)?, &req).await?;
        let (tx, rx) = mpsc::channel::<Result<Value, E2bError>>(64);
        tokio::task::spawn_blocking(move || {
            if tx.blocking_send(Ok(json!({"start": {}}))).is_err() {
                return;
            }
            let mut quiet_since = Instant::now();
            loop {
                if tx.is_closed() {
                    return;
                }
                match session.next_change(watch, Instant::now() + POLL) {
                    Ok(Some(change)) => {
                        quiet_since = Instant::now();
                        if let Some(ev) = fs_event(&mut session, &root, &change, include) {
                            if tx.blocking_send(Ok(json!({"filesystem": ev}))).is_err() {
                                return;
                            }
                        }
                    }
                    Ok(None) if quiet_since.elapsed() >= KEEPALIVE => {
                        quiet_since = Instant::now();
                        if tx.blocking_send(Ok(json!({"keepalive": {}}))).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let _ = tx.blocking_send(Err(E2bError::SandboxGone(format!(
                            "lost the sandbox while watching: {e}"
                        ))));
                        return;
                    }
                }
            }
        });
        Ok::<_, E2bError>(stream_response(rx))
    };
    match run.await {
        Ok(r) => r,
        Err(e) => stream_error(&e),
    }
}

async fn create_watcher(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let run = async {
        let id = super::named_sandbox(&headers)?;
        let req: WatchRequest = parse_unary(&headers, &body)?;
        let include = req.include_entry;
        let (mut session, boxed, watch, root) =
            open_watch(&state, &id, super::auth::user_from_headers(&headers)?, &req).await?;
        let polled = Arc::new(Polled {
            events: Mutex::new(VecDeque::new()),
            stop: AtomicBool::new(false),
            syncs: Mutex::new(Vec::new()),
        });
        let watcher_id = {
            let mut map = boxed.watchers.lock();
            if map.len() >= MAX_WATCHERS {
                return Err(E2bError::ResourceExhausted(format!(
                    "this sandbox already has {MAX_WATCHERS} watchers; remove some first"
                )));
            }
            let mut next = boxed
                .watchers
                .next
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            let wid = format!("w{}", *next);
            map.insert(wid.clone(), Arc::clone(&polled));
            wid
        };
        // The watcher's thread ends when the watcher is removed, the box ends (its Watchers
        // drop and stop every watcher) or the box's agent goes away.
        tokio::task::spawn_blocking(move || {
            poll_watcher(&polled, &mut session, watch, &root, include);
            // Ended: later polls answer at once with what was collected.
            polled.stop.store(true, Ordering::Release);
            drop(polled.take_syncs());
        });
        Ok::<_, E2bError>(json!({"watcherId": watcher_id}))
    };
    match run.await {
        Ok(v) => unary_ok(&v),
        Err(e) => unary_error(&e),
    }
}

/// A polled watcher's loop: collects events into `polled` and answers waiting polls, until
/// the watcher is stopped or the agent goes away.
fn poll_watcher(
    polled: &Polled,
    session: &mut AgentChannel,
    watch: u32,
    root: &str,
    include: bool,
) {
    let take = |session: &mut AgentChannel, deadline: Instant| match session
        .next_change(watch, deadline)
    {
        Ok(Some(change)) => {
            if let Some(ev) = fs_event(session, root, &change, include) {
                polled.push(ev);
            }
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    };
    while !polled.stop.load(Ordering::Acquire) {
        let waiting = polled.take_syncs();
        if !waiting.is_empty() {
            // The agent reports every change it has seen before it answers: after this round
            // trip the session holds the events of every change made before the poll; take
            // them all without waiting.
            if session.sync().is_err() {
                return;
            }
            loop {
                match take(session, Instant::now()) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(_) => return,
                }
            }
            for poll in waiting {
                let _ = poll.send(());
            }
        }
        if take(session, Instant::now() + POLLED_TICK).is_err() {
            return;
        }
    }
}

async fn find(
    state: &AppState,
    headers: &HeaderMap,
    body: &Bytes,
    remove: bool,
) -> Result<Arc<Polled>, E2bError> {
    let id = super::named_sandbox(headers)?;
    let req: WatcherRequest = parse_unary(headers, body)?;
    let (e2b, key) = (Arc::clone(&state.e2b), id.clone());
    let boxed = with_box(state, &id, move |_| Ok(e2b.box_state(&key))).await?;
    let mut map = boxed.watchers.lock();
    let found = if remove {
        map.remove(&req.watcher_id)
    } else {
        map.get(&req.watcher_id).cloned()
    };
    found.ok_or_else(|| {
        E2bError::NotFound(format!(
            "watcher {:?} not found in this sandbox",
            req.watcher_id
        ))
    })
}

async fn get_watcher_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match find(&state, &headers, &body, false).await {
        Ok(w) => {
            // Wait (bounded) for the watcher to take in every change made before this poll.
            // A watcher whose box or agent went away drops the sender: answer what it has.
            let (tx, rx) = oneshot::channel();
            w.syncs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(tx);
            let _ = tokio::time::timeout(SYNC_LIMIT, rx).await;
            let events: Vec<Value> = w
                .events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain(..)
                .collect();
            unary_ok(&json!({"events": events}))
        }
        Err(e) => unary_error(&e),
    }
}

async fn remove_watcher(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match find(&state, &headers, &body, true).await {
        Ok(w) => {
            w.stop.store(true, Ordering::Release);
            unary_ok(&json!({}))
        }
        Err(e) => unary_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_relative_to_the_watched_directory() {
        assert_eq!(relative("/home/user/d", "/home/user/d/f.txt"), "f.txt");
        assert_eq!(
            relative("/home/user/d/", "/home/user/d/sub/f.txt"),
            "sub/f.txt"
        );
        assert_eq!(
            relative("/home/user/d", "/home/user/dx/f.txt"),
            "f.txt",
            "a sibling with a common prefix is not inside"
        );
        assert_eq!(kind_name(FsEventKind::Overflow), None);
        assert_eq!(kind_name(FsEventKind::Create), Some("EVENT_TYPE_CREATE"));
    }
}
