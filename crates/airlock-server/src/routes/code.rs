//! The box's code interpreter: `POST /v1/sandboxes/{id}/code` runs a snippet in a persistent
//! context (Python, JavaScript or Bash) and streams its events as NDJSON lines; the
//! `/contexts` routes create, list, restart and delete contexts. Each language has a default
//! context (id `python`, `js` or `bash`), created on first use.
//!
//! A client that goes away interrupts its execution: once the stream's receiver is gone (noticed
//! at the execution's next event, or within a fraction of a second while it is silent), the box
//! sends it SIGINT (as a timeout does), and the context keeps its state.

use crate::auth::{require_box, Caller};
use crate::requests::{parse, CodeRequest, ContextRequest};
use crate::service::contexts::{
    create_in, delete_in, language_name, language_of, restart_in, run_in_context,
};
use crate::service::sandboxes::audit;
use crate::state::AppState;
use crate::ApiError;
use airlock_runtime::{CodeEvent, Language, SandboxError};
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::cell::Cell;
use std::time::Duration;
use tokio::sync::mpsc;

/// Lines buffered between the box and a slow client before the execution's events wait.
const LINES_BUFFERED: usize = 32;
/// The most code kept in the audit log, in bytes.
const AUDIT_CODE_MAX: usize = 4096;

enum Out {
    /// The context is ready and the code was sent: answer 200 and stream.
    Started,
    Line(Bytes),
    Fail(ApiError),
}

fn context_view(id: &str, language: Language) -> Value {
    json!({"id": id, "language": language_name(language)})
}

/// Runs code; answers 200 with the NDJSON stream once the context is ready.
pub async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let caller = require_box(&state, &headers, &id)?;
    let req: CodeRequest = parse(&body, false)?;
    let timeout = req.check()?;
    let language = req
        .language
        .as_deref()
        .map(|l| language_of(Some(l)))
        .transpose()?;
    let (tx, mut rx) = mpsc::channel::<Out>(LINES_BUFFERED);
    tokio::task::spawn_blocking(move || {
        execute(&state, &id, &caller, &req, language, timeout, &tx)
    });
    match rx.recv().await {
        Some(Out::Started) => {}
        Some(Out::Fail(e)) => return Err(e),
        Some(Out::Line(_)) | None => {
            return Err(ApiError::Internal(
                "the execution's worker ended without a word; retry".into(),
            ))
        }
    }
    let lines = futures_util::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Some(Out::Line(line)) => return Some((Ok::<Bytes, std::io::Error>(line), rx)),
                Some(Out::Fail(e)) => {
                    return Some((
                        Ok(line_of(
                            &json!({"type": "error", "name": e.code(), "value": e.to_string(), "traceback": []}),
                        )),
                        rx,
                    ))
                }
                Some(Out::Started) => continue,
                None => return None,
            }
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(lines))
        .map_err(|e| ApiError::Internal(format!("cannot build the response: {e}")))
}

fn execute(
    state: &AppState,
    id: &str,
    caller: &Caller,
    req: &CodeRequest,
    language: Option<Language>,
    timeout: Option<Duration>,
    tx: &mpsc::Sender<Out>,
) {
    let ctx_id = req
        .context
        .clone()
        .unwrap_or_else(|| language_name(language.unwrap_or(Language::Python)).to_string());
    let started = Cell::new(false);
    let outcome = run_in_context(
        state,
        id,
        &ctx_id,
        language,
        &req.code,
        &req.env,
        timeout,
        || {
            started.set(true);
            let _ = tx.blocking_send(Out::Started);
        },
        |e| tx.blocking_send(Out::Line(event_line(e))).is_ok(),
        || !tx.is_closed(),
    );
    let end = match Ok::<_, ApiError>(outcome) {
        Err(e) => {
            let _ = tx.blocking_send(Out::Fail(e));
            return;
        }
        Ok(Err(e)) => {
            let _ = tx.blocking_send(Out::Fail(e));
            if !started.get() {
                return;
            }
            None
        }
        Ok(Ok(Err(SandboxError::Setup { stage, message }))) if stage == "interpreter" => {
            let _ = tx.blocking_send(Out::Line(line_of(
                &json!({"type": "error", "name": "ContextDied", "value": message, "traceback": []}),
            )));
            let _ = tx.blocking_send(Out::Line(line_of(
                &json!({"type": "end", "execution_count": null, "status": "error"}),
            )));
            Some((None, "error".to_string()))
        }
        Ok(Ok(Err(e))) => {
            let _ = tx.blocking_send(Out::Fail(ApiError::from_box(e)));
            None
        }
        Ok(Ok(Ok(end))) => {
            let _ = tx.blocking_send(Out::Line(line_of(&json!({"type": "end", "execution_count": end.execution_count, "status": end.status}))));
            Some((Some(end.execution_count), end.status))
        }
    };
    let mut shown = req.code.clone();
    if shown.len() > AUDIT_CODE_MAX {
        let mut cut = AUDIT_CODE_MAX;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
    }
    let summary = json!({
        "context": ctx_id,
        "code": shown,
        "execution_count": end.as_ref().and_then(|e| e.0),
        "status": end.as_ref().map(|e| e.1.as_str()),
        "completed": end.is_some(),
    });
    audit(state, id, "code", caller, summary);
}

fn event_line(e: &CodeEvent) -> Bytes {
    line_of(&match e {
        CodeEvent::Stdout { text, time } => json!({"type": "stdout", "text": text, "time": time}),
        CodeEvent::Stderr { text, time } => json!({"type": "stderr", "text": text, "time": time}),
        CodeEvent::Display(data) => json!({"type": "display", "data": data}),
        CodeEvent::Result(data) => json!({"type": "result", "data": data}),
        CodeEvent::Error {
            name,
            value,
            traceback,
        } => json!({"type": "error", "name": name, "value": value, "traceback": traceback}),
    })
}

fn line_of(v: &Value) -> Bytes {
    let mut text = v.to_string();
    text.push('\n');
    Bytes::from(text)
}

/// `POST /v1/sandboxes/{id}/contexts`: a new context with a fresh id.
pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    require_box(&state, &headers, &id)?;
    let req: ContextRequest = parse(&body, true)?;
    req.check()?;
    let language = language_of(req.language.as_deref())?;
    let view = state
        .blocking(move |state| {
            state
                .manager
                .with_handle(&id, |h| {
                    Ok::<Value, ApiError>(context_view(&create_in(h, language, req.cwd)?, language))
                })
                .map_err(|e| state.manager_error(&id, e))?
        })
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// `GET /v1/sandboxes/{id}/contexts`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let listed = state
        .blocking(move |state| {
            state
                .manager
                .with_handle(&id, |h| {
                    let (_, contexts) = h.parts();
                    let mut all: Vec<(&String, Language)> =
                        contexts.iter().map(|(k, v)| (k, v.language)).collect();
                    all.sort_by(|a, b| a.0.cmp(b.0));
                    all.into_iter()
                        .map(|(k, l)| context_view(k, l))
                        .collect::<Vec<Value>>()
                })
                .map_err(|e| state.manager_error(&id, e))
        })
        .await?;
    Ok(Json(json!({ "contexts": listed })))
}

/// `POST /v1/sandboxes/{id}/contexts/{ctx}/restart`: a new process under the same id; the
/// context's state is gone.
pub async fn restart(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, ctx_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let view = state
        .blocking(move |state| {
            state
                .manager
                .with_handle(&id, |h| Ok(context_view(&ctx_id, restart_in(h, &ctx_id)?)))
                .map_err(|e| state.manager_error(&id, e))?
        })
        .await?;
    Ok(Json(view))
}

/// `DELETE /v1/sandboxes/{id}/contexts/{ctx}`: ends the context's process.
pub async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, ctx_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    require_box(&state, &headers, &id)?;
    state
        .blocking(move |state| {
            state
                .manager
                .with_handle(&id, |h| delete_in(h, &ctx_id))
                .map_err(|e| state.manager_error(&id, e))?
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
