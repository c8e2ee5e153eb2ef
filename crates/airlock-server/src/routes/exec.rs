//! `POST /v1/sandboxes/{id}/exec`: runs a command in the box and streams what it does as
//! NDJSON lines, as they happen. A client that goes away kills the command.

use crate::auth::{require_box, Caller};
use crate::requests::{parse, ExecRequest};
use crate::service::sandboxes::audit;
use crate::state::AppState;
use crate::ApiError;
use airlock_runtime::{Command, ExitInfo, Stream};
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use base64::Engine;
use std::cell::Cell;
use tokio::sync::mpsc;

/// Lines buffered between the box and a slow client before the command's output waits.
const LINES_BUFFERED: usize = 32;

enum Out {
    Line(Bytes),
    Fail(ApiError),
}

/// Runs a command; answers 200 with the NDJSON stream once the command has started.
pub async fn exec(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let req: ExecRequest = parse(&body, false)?;
    let cmd = command(req)?;
    let (tx, mut rx) = mpsc::channel::<Out>(LINES_BUFFERED);
    tokio::task::spawn_blocking(move || run(&state, &id, &caller, &cmd, &tx));
    let first = match rx.recv().await {
        Some(Out::Line(first)) => first,
        Some(Out::Fail(e)) => return Err(e),
        None => {
            return Err(ApiError::Internal(
                "the command's worker ended without a word; retry".into(),
            ))
        }
    };
    let lines = futures_util::stream::unfold((Some(first), rx), |(first, mut rx)| async move {
        if let Some(line) = first {
            return Some((Ok::<Bytes, std::io::Error>(line), (None, rx)));
        }
        match rx.recv().await {
            Some(Out::Line(line)) => Some((Ok(line), (None, rx))),
            Some(Out::Fail(e)) => Some((
                Ok(line_of(
                    &serde_json::json!({"type": "error", "code": e.code(), "message": e.to_string()}),
                )),
                (None, rx),
            )),
            None => None,
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(lines))
        .map_err(|e| ApiError::Internal(format!("cannot build the response: {e}")))
}

fn command(req: ExecRequest) -> Result<Command, ApiError> {
    let timeout = req.check()?;
    Ok(Command {
        argv: req.cmd,
        env: req.env.into_iter().collect(),
        cwd: req.cwd,
        stdin: req.stdin.map(String::into_bytes),
        timeout,
        user: req.user.unwrap_or_default(),
    })
}

fn run(state: &AppState, id: &str, caller: &Caller, cmd: &Command, tx: &mpsc::Sender<Out>) {
    let started = Cell::new(false);
    let _working = state.working(id);
    // A session of its own: the box stays usable (and killable) while the command runs.
    let outcome = state
        .manager
        .with_handle(id, |h| h.sandbox().new_channel())
        .map(|mut session| {
            session.exec_stream(
                cmd,
                |pid| {
                    started.set(true);
                    let _ = tx.blocking_send(Out::Line(line_of(
                        &serde_json::json!({"type": "start", "pid": pid}),
                    )));
                },
                |stream, data| {
                    tx.blocking_send(Out::Line(chunk_line(stream, data)))
                        .is_ok()
                },
            )
        });
    let exit = match outcome {
        Err(e) => {
            let _ = tx.blocking_send(Out::Fail(state.manager_error(id, e)));
            return;
        }
        Ok(Err(e)) if !started.get() => {
            let _ = tx.blocking_send(Out::Fail(ApiError::from_box(e)));
            return;
        }
        Ok(Err(e)) => {
            let e = ApiError::from(e);
            let _ = tx.blocking_send(Out::Fail(e));
            None
        }
        Ok(Ok(exit)) => {
            let _ = tx.blocking_send(Out::Line(end_line(&exit)));
            Some(exit)
        }
    };
    let mut shown: String = cmd.argv.join(" ");
    if shown.len() > 4096 {
        let mut cut = 4096;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
    }
    let summary = serde_json::json!({
        "cmd": shown,
        "exit_code": exit.and_then(|e| e.exit_code),
        "signal": exit.and_then(|e| e.signal),
        "timed_out": exit.is_some_and(|e| e.timed_out),
        "completed": exit.is_some(),
    });
    audit(state, id, "exec", caller, summary);
}

/// One output chunk as a line: UTF-8 text in `data`, anything else base64 in `data_b64`.
pub fn chunk_line(stream: Stream, data: &[u8]) -> Bytes {
    let kind = match stream {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
    };
    match std::str::from_utf8(data) {
        Ok(text) => line_of(&serde_json::json!({"type": kind, "data": text})),
        Err(_) => line_of(
            &serde_json::json!({"type": kind, "data_b64": base64::engine::general_purpose::STANDARD.encode(data)}),
        ),
    }
}

fn end_line(exit: &ExitInfo) -> Bytes {
    line_of(
        &serde_json::json!({"type": "end", "exit_code": exit.exit_code, "signal": exit.signal, "timed_out": exit.timed_out}),
    )
}

fn line_of(v: &serde_json::Value) -> Bytes {
    let mut text = v.to_string();
    text.push('\n');
    Bytes::from(text)
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
