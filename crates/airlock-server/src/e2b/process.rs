//! envd's `process.Process` Connect service on the box's agent: `Start` and `Connect` stream a
//! process's events, `List`, `SendInput`, `StreamInput`, `SendSignal`, `CloseStdin` and `Update`
//! act on running processes. Each call has its own agent session, so a streaming command never
//! holds up the box. A stream whose client goes away detaches: the process runs on (envd's
//! behaviour, which background commands rely on), and a later `Connect` picks it up. The envd
//! router puts the access-token check in front of these routes.

use super::boxio::with_box;
use super::boxstate::E2bBox;
use super::connect::{
    self, closing, parse_stream_request, parse_unary, stream_error, stream_response, unary_error,
    unary_ok, EnvelopeReader,
};
use super::error::E2bError;
use super::procs::{self, ProcEntry, ProcessConfig, Procs, Selector};
use crate::state::AppState;
use airlock_runtime::{AgentChannel, ProcessSpec, TtySize};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Events buffered between a process and a slow client before the process's output waits.
const EVENTS_BUFFERED: usize = 64;
/// Keepalive interval when the client names none (envd's default).
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(90);

/// The `process.Process` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/process.Process/Start", post(start))
        .route("/process.Process/Connect", post(connect))
        .route("/process.Process/List", post(list))
        .route("/process.Process/SendInput", post(send_input))
        .route("/process.Process/StreamInput", post(stream_input))
        .route("/process.Process/SendSignal", post(send_signal))
        .route("/process.Process/CloseStdin", post(close_stdin))
        .route("/process.Process/Update", post(update))
        .route("/process.Process/{method}", post(unknown))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PtySpec {
    #[serde(default)]
    size: Option<PtySize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PtySize {
    #[serde(default)]
    cols: u32,
    #[serde(default)]
    rows: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartRequest {
    #[serde(default)]
    process: ProcessConfig,
    #[serde(default)]
    pty: Option<PtySpec>,
    #[serde(default)]
    tag: Option<String>,
    /// proto3 `optional bool`, true when absent (envd's default).
    #[serde(default)]
    stdin: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SelectRequest {
    #[serde(default)]
    process: Option<Selector>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ProcessInput {
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    pty: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendInputRequest {
    #[serde(default)]
    process: Option<Selector>,
    #[serde(default)]
    input: ProcessInput,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignalRequest {
    #[serde(default)]
    process: Option<Selector>,
    #[serde(default)]
    signal: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateRequest {
    #[serde(default)]
    process: Option<Selector>,
    #[serde(default)]
    pty: Option<PtySpec>,
}

/// One message of a `StreamInput` client stream: a oneof of start, data and keepalive.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamInputMessage {
    #[serde(default)]
    start: Option<SelectRequest>,
    #[serde(default)]
    data: Option<StreamData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamData {
    #[serde(default)]
    input: ProcessInput,
}

/// Decodes `message` as each of the service's request types (for fuzzing: any bytes, no panic).
pub fn decode_any(message: &[u8]) {
    let _ = connect::decode::<StartRequest>(message).map(|r| tty_size(r.pty.as_ref()));
    let _ = connect::decode::<SelectRequest>(message);
    let _ = connect::decode::<SendInputRequest>(message).map(|r| decode_input(&r.input));
    let _ = connect::decode::<SignalRequest>(message);
    let _ = connect::decode::<UpdateRequest>(message).map(|r| tty_size(r.pty.as_ref()));
    let _ = connect::decode::<StreamInputMessage>(message);
}

fn keepalive(headers: &HeaderMap) -> Duration {
    headers
        .get("keepalive-ping-interval")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(DEFAULT_KEEPALIVE, |s| Duration::from_secs(s.min(3600)))
}

/// A session of its own on the box, and the box's gateway state.
async fn open(state: &AppState, id: &str) -> Result<(AgentChannel, Arc<E2bBox>), E2bError> {
    let (e2b, key) = (Arc::clone(&state.e2b), id.to_string());
    with_box(state, id, move |h| {
        Ok((h.sandbox().new_channel(), e2b.box_state(&key)))
    })
    .await
}

fn selected(procs: &Procs, sel: Option<&Selector>) -> Result<i32, E2bError> {
    let sel = sel.ok_or_else(|| {
        E2bError::InvalidArgument(
            "the request names no process: give process.pid or process.tag".into(),
        )
    })?;
    procs::resolve(procs, sel).map_err(E2bError::NotFound)
}

fn tty_size(pty: Option<&PtySpec>) -> Result<Option<TtySize>, E2bError> {
    let Some(pty) = pty else { return Ok(None) };
    let size = pty.size.as_ref().map_or((24, 80), |s| (s.rows, s.cols));
    let fit = |n: u32, what: &str| {
        u16::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
            E2bError::InvalidArgument(format!("pty {what} {n} is out of range (1–65535)"))
        })
    };
    Ok(Some(TtySize {
        rows: fit(size.0, "rows")?,
        cols: fit(size.1, "cols")?,
    }))
}

fn decode_input(input: &ProcessInput) -> Result<Vec<u8>, E2bError> {
    let text = input
        .stdin
        .as_deref()
        .or(input.pty.as_deref())
        .unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| {
            E2bError::InvalidArgument("the input is not valid base64 (proto3 JSON bytes)".into())
        })
}

/// A process that is no longer running answers `not_found`, as envd does.
fn gone(e: E2bError, pid: i32) -> E2bError {
    match e {
        E2bError::NotFound(_) | E2bError::InvalidArgument(_) => {
            E2bError::NotFound(format!("process {pid} not found"))
        }
        other => other,
    }
}

async fn start(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let req = match parse_stream_request::<StartRequest>(&headers, body).await {
        Ok(r) => r,
        Err(e) => return closing(stream_error(&e)),
    };
    match start_inner(&state, &headers, req).await {
        Ok(r) => r,
        Err(e) => stream_error(&e),
    }
}

async fn start_inner(
    state: &AppState,
    headers: &HeaderMap,
    req: StartRequest,
) -> Result<Response, E2bError> {
    let id = super::named_sandbox(headers)?;
    if req.process.cmd.is_empty() {
        return Err(E2bError::InvalidArgument(
            "process.cmd is empty: give the program to run".into(),
        ));
    }
    let tty = tty_size(req.pty.as_ref())?;
    let timeout_ms = connect::timeout(headers)
        .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
        .filter(|ms| *ms > 0);
    let user = super::auth::user_from_headers(headers)?;
    let every = keepalive(headers);
    let (e2b, key) = (Arc::clone(&state.e2b), id.clone());
    let (mut session, boxed, has_root) = with_box(state, &id, move |h| {
        let has_root = h.sandbox().receipt().is_some_and(|r| r.has_root());
        Ok((h.sandbox().new_channel(), e2b.box_state(&key), has_root))
    })
    .await?;
    let exec_user = user.exec_user(has_root);
    let mut env = req.process.envs.clone();
    let mut cwd = req
        .process
        .cwd
        .clone()
        .filter(|c| !c.is_empty())
        .map(|c| super::auth::resolve_path_as(user, &c))
        .transpose()?;
    if exec_user == airlock_protocol::ExecUser::Root {
        // As envd: root's commands start in root's home, with root's name and home in their
        // environment (what the request sets wins).
        for (k, v) in [
            ("HOME", user.home()),
            ("USER", user.name()),
            ("LOGNAME", user.name()),
        ] {
            env.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        cwd.get_or_insert_with(|| user.home().to_string());
    }
    let spec = ProcessSpec {
        argv: std::iter::once(req.process.cmd.clone())
            .chain(req.process.args.iter().cloned())
            .collect(),
        env,
        cwd,
        tty,
        stdin: req.stdin.unwrap_or(true),
        timeout_ms,
        tag: req.tag.clone(),
        user: exec_user,
    };
    // A running command is work: an idle pause must not freeze it while its client waits.
    let working = state.working(&id);
    let (started, session) =
        tokio::task::spawn_blocking(move || session.start_process(&spec).map(|s| (s, session)))
            .await
            .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
            .map_err(E2bError::from)?;
    let pty = tty.is_some();
    boxed.procs.insert(
        started.pid,
        ProcEntry {
            config: req.process,
            tag: req.tag,
            stdin: started.stdin,
            pty,
        },
    );
    Ok(relay_stream(
        session,
        started,
        pty,
        every,
        boxed,
        working,
        Detached::Watch,
    ))
}

/// What happens when the client of a started process leaves while it runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detached {
    /// It is still work until it ends (it was started here: E2B keeps a command whose client
    /// left running, and an idle pause must not freeze it).
    Watch,
    /// Nothing more (a `connect` to a process its start's stream already watches).
    Forget,
}

/// Streams `started`'s events (a `start` event first) until it ends or the client leaves,
/// holding `working` (the box is busy, not idle) for as long, and with [`Detached::Watch`]
/// until the process ends even if the client left before.
fn relay_stream(
    mut session: AgentChannel,
    started: airlock_runtime::ExecReply,
    pty: bool,
    every: Duration,
    boxed: Arc<E2bBox>,
    working: crate::state::Work,
    detached: Detached,
) -> Response {
    let (tx, rx) = mpsc::channel(EVENTS_BUFFERED);
    tokio::task::spawn_blocking(move || {
        let _working = working;
        let relayed = match tx.blocking_send(Ok(procs::start_event(started.pid))) {
            Ok(()) => procs::relay(&mut session, &started, pty, every, &tx),
            Err(_) => procs::Relayed::ClientLeft,
        };
        drop(tx);
        let ended = match relayed {
            procs::Relayed::Ended => true,
            procs::Relayed::ClientLeft if detached == Detached::Watch => {
                procs::wait_end(&mut session, &started)
            }
            procs::Relayed::ClientLeft | procs::Relayed::Lost => false,
        };
        if ended {
            boxed.procs.remove(started.pid);
        }
    });
    stream_response(rx)
}

async fn connect(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let req = match parse_stream_request::<SelectRequest>(&headers, body).await {
        Ok(r) => r,
        Err(e) => return closing(stream_error(&e)),
    };
    match connect_inner(&state, &headers, req).await {
        Ok(r) => r,
        Err(e) => stream_error(&e),
    }
}

async fn connect_inner(
    state: &AppState,
    headers: &HeaderMap,
    req: SelectRequest,
) -> Result<Response, E2bError> {
    let id = super::named_sandbox(headers)?;
    let (mut session, boxed) = open(state, &id).await?;
    let pid = selected(&boxed.procs, req.process.as_ref())?;
    let pty = boxed.procs.get(pid).is_some_and(|e| e.pty);
    let every = keepalive(headers);
    let working = state.working(&id);
    let (started, session) = tokio::task::spawn_blocking(move || {
        session.attach_process(pid, false).map(|s| (s, session))
    })
    .await
    .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
    .map_err(|e| gone(E2bError::from(e), pid))?;
    Ok(relay_stream(
        session,
        started,
        pty,
        every,
        boxed,
        working,
        Detached::Forget,
    ))
}

async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let run = async {
        let id = super::named_sandbox(&headers)?;
        let _: Value = parse_unary(&headers, &body)?;
        let (mut session, boxed) = open(&state, &id).await?;
        let all = tokio::task::spawn_blocking(move || session.list_processes())
            .await
            .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
            .map_err(E2bError::from)?;
        let processes: Vec<Value> = all
            .into_iter()
            .filter(|p| p.running)
            .map(|p| {
                let (config, tag) = match boxed.procs.get(p.pid) {
                    Some(e) => (e.config.to_json(), e.tag.or(p.tag)),
                    None => {
                        let mut argv = p.argv.into_iter();
                        let cmd = argv.next().unwrap_or_default();
                        (
                            json!({"cmd": cmd, "args": argv.collect::<Vec<_>>(), "envs": {}}),
                            p.tag,
                        )
                    }
                };
                let mut info = json!({"config": config, "pid": p.pid});
                if let Some(tag) = tag {
                    info["tag"] = json!(tag);
                }
                info
            })
            .collect();
        Ok::<_, E2bError>(json!({"processes": processes}))
    };
    match run.await {
        Ok(v) => unary_ok(&v),
        Err(e) => unary_error(&e),
    }
}

/// Runs `f` with a fresh session of sandbox `id` and the pid the selector names, off the async
/// threads; answers the unary `{}` or the error.
async fn on_process(
    state: &AppState,
    headers: &HeaderMap,
    sel: Option<Selector>,
    f: impl FnOnce(&mut AgentChannel, &Procs, i32) -> Result<(), E2bError> + Send + 'static,
) -> Response {
    let run = async {
        let id = super::named_sandbox(headers)?;
        let (mut session, boxed) = open(state, &id).await?;
        let pid = selected(&boxed.procs, sel.as_ref())?;
        tokio::task::spawn_blocking(move || f(&mut session, &boxed.procs, pid))
            .await
            .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
    };
    match run.await {
        Ok(()) => unary_ok(&json!({})),
        Err(e) => unary_error(&e),
    }
}

fn stdin_of(procs: &Procs, pid: i32) -> Result<u32, E2bError> {
    match procs.get(pid) {
        None => Err(E2bError::NotFound(format!("process {pid} not found (or not started through this API)"))),
        Some(ProcEntry { stdin: None, .. }) => Err(E2bError::FailedPrecondition(format!(
            "process {pid} has no open stdin: start it with stdin enabled, and do not close it before sending"
        ))),
        Some(ProcEntry { stdin: Some(ch), .. }) => Ok(ch),
    }
}

async fn send_input(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let req: SendInputRequest = match parse_unary(&headers, &body) {
        Ok(r) => r,
        Err(e) => return unary_error(&e),
    };
    let data = match decode_input(&req.input) {
        Ok(d) => d,
        Err(e) => return unary_error(&e),
    };
    on_process(&state, &headers, req.process, move |session, procs, pid| {
        let ch = stdin_of(procs, pid)?;
        session
            .send_input(ch, &data)
            .map_err(|e| gone(E2bError::from(e), pid))
    })
    .await
}

async fn stream_input(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match stream_input_inner(&state, &headers, body).await {
        Ok(()) => {
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Ok(json!({})));
            drop(tx);
            stream_response(rx)
        }
        // The rest of the client stream may be unread.
        Err(e) => closing(stream_error(&e)),
    }
}

async fn stream_input_inner(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(), E2bError> {
    let id = super::named_sandbox(headers)?;
    let mut reader = EnvelopeReader::new(headers, body)?;
    let (session, boxed) = open(state, &id).await?;
    let procs = &boxed.procs;
    let mut session = Some(session);
    let mut target: Option<(i32, u32)> = None;
    while let Some(msg) = reader.next_message::<StreamInputMessage>().await? {
        if let Some(start) = msg.start {
            let pid = selected(procs, start.process.as_ref())?;
            target = Some((pid, stdin_of(procs, pid)?));
        } else if let Some(data) = msg.data {
            let (pid, ch) = target.ok_or_else(|| {
                E2bError::InvalidArgument("StreamInput sent data before its start message".into())
            })?;
            let bytes = decode_input(&data.input)?;
            let mut s = session
                .take()
                .ok_or_else(|| E2bError::Internal("the input session was lost".into()))?;
            let (result, s) = tokio::task::spawn_blocking(move || (s.send_input(ch, &bytes), s))
                .await
                .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?;
            session = Some(s);
            result.map_err(|e| gone(E2bError::from(e), pid))?;
        }
    }
    Ok(())
}

async fn send_signal(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let req: SignalRequest = match parse_unary(&headers, &body) {
        Ok(r) => r,
        Err(e) => return unary_error(&e),
    };
    let signal = match &req.signal {
        Value::String(s) if s == "SIGNAL_SIGKILL" => libc::SIGKILL,
        Value::String(s) if s == "SIGNAL_SIGTERM" => libc::SIGTERM,
        Value::Number(n) if n.as_i64() == Some(9) => libc::SIGKILL,
        Value::Number(n) if n.as_i64() == Some(15) => libc::SIGTERM,
        other => {
            return unary_error(&E2bError::InvalidArgument(format!(
                "signal {other} is not supported: use SIGNAL_SIGTERM or SIGNAL_SIGKILL"
            )))
        }
    };
    on_process(&state, &headers, req.process, move |session, _, pid| {
        session
            .signal_process(pid, signal)
            .map_err(|e| gone(E2bError::from(e), pid))
    })
    .await
}

async fn close_stdin(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let req: SelectRequest = match parse_unary(&headers, &body) {
        Ok(r) => r,
        Err(e) => return unary_error(&e),
    };
    on_process(&state, &headers, req.process, move |session, procs, pid| {
        stdin_of(procs, pid)?;
        match procs.take_stdin(pid) {
            Some(ch) => session
                .close_input(ch)
                .map_err(|e| gone(E2bError::from(e), pid)),
            None => Ok(()),
        }
    })
    .await
}

async fn update(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let req: UpdateRequest = match parse_unary(&headers, &body) {
        Ok(r) => r,
        Err(e) => return unary_error(&e),
    };
    let size = match tty_size(req.pty.as_ref()) {
        Ok(s) => s,
        Err(e) => return unary_error(&e),
    };
    on_process(
        &state,
        &headers,
        req.process,
        move |session, _, pid| match size {
            Some(size) => session
                .resize_process(pid, size)
                .map_err(|e| gone(E2bError::from(e), pid)),
            None => Ok(()),
        },
    )
    .await
}

async fn unknown(Path(method): Path<String>) -> Response {
    unary_error(&E2bError::Unimplemented(format!(
        "process.Process/{method} is not a method airlock serves"
    )))
}
