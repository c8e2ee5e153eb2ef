//! The code interpreter (E2B's port 49999): `POST /execute` streams an execution as NDJSON
//! lines in E2B's shapes; `/contexts` creates, lists, restarts and removes contexts;
//! `GET /health` answers `"OK"`. Contexts are the same ones the native `/code` routes use
//! (a language's default context, `python`, `js` or `bash`, is shared by both APIs).
//!
//! Credentials: the sandbox's access token, in `X-Access-Token` (what the SDKs send to
//! `/execute`) or `E2B-Traffic-Access-Token` (what they send everywhere here: the control
//! plane hands out the same token as the traffic token).
//!
//! A client that disconnects interrupts its execution (within a fraction of a second, even when
//! the execution is silent), as E2B's interpreter does; the context keeps its state.

use super::auth::check_token;
use super::boxio::with_box;
use super::error::E2bError;
use crate::service::contexts::{create_in, delete_in, restart_in, run_in_context};
use crate::state::AppState;
use airlock_runtime::{CodeEvent, Language, SandboxError};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// Lines buffered between the box and a slow client.
const LINES_BUFFERED: usize = 32;
/// A keepalive line is sent after this long without output.
const KEEPALIVE: Duration = Duration::from_secs(5);
/// The largest `/execute` or `/contexts` body.
const MAX_BODY: usize = 8 << 20;

/// The interpreter's router.
pub fn router(state: AppState) -> Router {
    let guarded = Router::new()
        .route("/execute", post(execute))
        .route("/contexts", post(create_context).get(list_contexts))
        .route("/contexts/{ctx}", delete(delete_context))
        .route("/contexts/{ctx}/restart", post(restart_context))
        .route_layer(from_fn_with_state(state.clone(), guard));
    Router::new()
        .route("/health", get(|| async { Json("OK") }))
        .merge(guarded)
        .fallback(|| async {
            E2bError::NotFound("the code interpreter has no such route".into()).text_response()
        })
        .with_state(state)
}

async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let checked = (|| {
        let id = super::sandbox_id(req.headers())
            .ok_or_else(|| E2bError::InvalidArgument("E2b-Sandbox-Id is missing".into()))?;
        let token = ["x-access-token", "e2b-traffic-access-token"]
            .iter()
            .find_map(|h| req.headers().get(*h).and_then(|v| v.to_str().ok()))
            .ok_or_else(|| {
                E2bError::Unauthenticated(
                    "send the sandbox's access token in X-Access-Token or E2B-Traffic-Access-Token"
                        .into(),
                )
            })?;
        check_token(&state.e2b, id, token.trim())
    })();
    match checked {
        Ok(()) => next.run(req).await,
        Err(e) => e.text_response(),
    }
}

fn id_of(headers: &HeaderMap) -> Result<String, E2bError> {
    super::sandbox_id(headers)
        .map(str::to_string)
        .ok_or_else(|| E2bError::InvalidArgument("E2b-Sandbox-Id is missing".into()))
}

/// The language a request names, normalised as E2B does (lowercase, `js` → JavaScript,
/// `ts` → TypeScript, default Python). Other languages are refused, naming those served.
pub fn language(name: Option<&str>) -> Result<Language, E2bError> {
    let name = name
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "python".into());
    match name.as_str() {
        "python" => Ok(Language::Python),
        "js" | "javascript" => Ok(Language::JavaScript),
        "ts" | "typescript" => Ok(Language::TypeScript),
        "bash" => Ok(Language::Bash),
        other => Err(E2bError::InvalidArgument(format!(
            "language {other:?} is not supported; use python, javascript, typescript or bash"
        ))),
    }
}

/// A language's name in E2B's context objects.
pub fn language_name(l: Language) -> &'static str {
    match l {
        Language::Python => "python",
        Language::JavaScript => "javascript",
        Language::TypeScript => "typescript",
        Language::Bash => "bash",
    }
}

async fn read(body: Body) -> Result<Bytes, E2bError> {
    super::connect::read_body(body, MAX_BODY).await
}

fn parse<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, E2bError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        E2bError::InvalidArgument(format!("the request body is not valid for this route: {e}"))
    })
}

#[derive(Debug, Default, Deserialize)]
struct ExecuteRequest {
    #[serde(default)]
    code: String,
    context_id: Option<String>,
    language: Option<String>,
    env_vars: Option<BTreeMap<String, String>>,
}

enum Out {
    Started,
    Line(Value),
    Fail(E2bError),
}

fn line(v: &Value) -> Bytes {
    let mut text = v.to_string();
    text.push('\n');
    Bytes::from(text)
}

fn nanos(time: f64) -> i64 {
    (time * 1e9) as i64
}

/// The drivers' mime types of E2B's chart and data structures (`result.chart`,
/// `result.data` in the SDKs).
const CHART_MIME: &str = "application/vnd.airlock.chart+json";
const DATA_MIME: &str = "application/vnd.airlock.data+json";

/// A result's `text` as E2B's interpreter gives it: a `str`'s repr loses one pair of
/// surrounding quotes (`'hi'` is `hi`); any other text is kept.
pub fn e2b_text(text: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = text
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    text
}

/// A mime bundle as E2B's result formats.
pub fn formats(data: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let mut extra = Map::new();
    if let Value::Object(bundle) = data {
        for (mime, content) in bundle {
            let key = match mime.as_str() {
                "text/plain" => {
                    let text = content.as_str().map(|t| json!(e2b_text(t)));
                    out.insert("text".into(), text.unwrap_or_else(|| content.clone()));
                    continue;
                }
                CHART_MIME => "chart",
                DATA_MIME => "data",
                "text/html" => "html",
                "text/markdown" => "markdown",
                "image/svg+xml" => "svg",
                "image/png" => "png",
                "image/jpeg" => "jpeg",
                "application/pdf" => "pdf",
                "text/latex" => "latex",
                "application/json" => "json",
                "application/javascript" => "javascript",
                _ => {
                    extra.insert(mime.clone(), content.clone());
                    continue;
                }
            };
            out.insert(key.into(), content.clone());
        }
    }
    if !extra.is_empty() {
        out.insert("extra".into(), Value::Object(extra));
    }
    out
}

/// One execution event as an E2B line.
pub fn event_line(e: &CodeEvent) -> Value {
    match e {
        CodeEvent::Stdout { text, time } => {
            json!({"type": "stdout", "text": text, "timestamp": nanos(*time)})
        }
        CodeEvent::Stderr { text, time } => {
            json!({"type": "stderr", "text": text, "timestamp": nanos(*time)})
        }
        CodeEvent::Result(data) | CodeEvent::Display(data) => {
            let mut v = formats(data);
            v.insert("type".into(), json!("result"));
            v.insert(
                "is_main_result".into(),
                json!(matches!(e, CodeEvent::Result(_))),
            );
            Value::Object(v)
        }
        CodeEvent::Error {
            name,
            value,
            traceback,
        } => {
            json!({"type": "error", "name": name, "value": value, "traceback": traceback.join("\n")})
        }
    }
}

async fn execute(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match execute_inner(state, headers, body).await {
        Ok(r) => r,
        Err(e) => e.text_response(),
    }
}

async fn execute_inner(
    state: AppState,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, E2bError> {
    let id = id_of(&headers)?;
    let req: ExecuteRequest = parse(&read(body).await?)?;
    if req.context_id.is_some() && req.language.is_some() {
        return Err(E2bError::InvalidArgument(
            "give context_id or language, not both".into(),
        ));
    }
    let (ctx_id, lang) = match &req.context_id {
        Some(ctx) => (ctx.clone(), None),
        None => {
            let l = language(req.language.as_deref())?;
            (
                crate::service::contexts::language_name(l).to_string(),
                Some(l),
            )
        }
    };
    let (tx, mut rx) = mpsc::channel::<Out>(LINES_BUFFERED);
    tokio::task::spawn_blocking(move || {
        let env = req.env_vars.unwrap_or_default();
        let outcome = run_in_context(
            &state,
            &id,
            &ctx_id,
            lang,
            &req.code,
            &env,
            None,
            || {
                let _ = tx.blocking_send(Out::Started);
            },
            |e| tx.blocking_send(Out::Line(event_line(e))).is_ok(),
            || !tx.is_closed(),
        )
        .map_err(|e| match e {
            // The box ended: the gateway's word for that (an unknown context stays a 404).
            crate::ApiError::NotRunning(m) => E2bError::SandboxGone(m),
            other => E2bError::from(other),
        });
        match outcome {
            Err(e) => {
                let _ = tx.blocking_send(Out::Fail(e));
            }
            Ok(Ok(end)) => {
                let _ = tx.blocking_send(Out::Line(
                    json!({"type": "number_of_executions", "execution_count": end.execution_count}),
                ));
                let _ = tx.blocking_send(Out::Line(json!({"type": "end_of_execution"})));
            }
            Ok(Err(e)) => {
                let value = match e {
                    SandboxError::Setup { message, .. } => message,
                    other => match E2bError::from(other) {
                        gone if gone.drops_stream() => {
                            let _ = tx.blocking_send(Out::Fail(gone));
                            return;
                        }
                        other => other.to_string(),
                    },
                };
                let _ = tx.blocking_send(Out::Line(json!({"type": "error", "name": "ExecutionAborted", "value": value, "traceback": ""})));
                let _ = tx.blocking_send(Out::Line(json!({"type": "end_of_execution"})));
            }
        }
    });
    match rx.recv().await {
        Some(Out::Started) => {}
        Some(Out::Fail(e)) => return Err(e),
        Some(Out::Line(_)) | None => {
            return Err(E2bError::Internal(
                "the execution's worker ended without a word; retry".into(),
            ))
        }
    }
    let lines = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        loop {
            match tokio::time::timeout(KEEPALIVE, rx.recv()).await {
                Err(_) => {
                    return Some((
                        Ok::<Bytes, std::io::Error>(line(&json!({"type": "keepalive"}))),
                        Some(rx),
                    ))
                }
                Ok(Some(Out::Line(v))) => return Some((Ok(line(&v)), Some(rx))),
                // The box ended under the execution: the connection drops, as the kernel's
                // does when E2B's sandbox is killed (the SDKs then say it was killed).
                Ok(Some(Out::Fail(e))) if e.drops_stream() => {
                    return Some((Err(super::connect::dropped(&e)), None))
                }
                Ok(Some(Out::Fail(e))) => {
                    let v = json!({"type": "error", "name": "UnexpectedEndOfExecution", "value": e.to_string(), "traceback": ""});
                    let mut bytes = line(&v).to_vec();
                    bytes.extend_from_slice(&line(&json!({"type": "end_of_execution"})));
                    return Some((Ok(Bytes::from(bytes)), None));
                }
                Ok(Some(Out::Started)) => continue,
                Ok(None) => return None,
            }
        }
    });
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(lines),
    )
        .into_response())
}

#[derive(Debug, Default, Deserialize)]
struct ContextRequest {
    language: Option<String>,
    cwd: Option<String>,
}

fn context_view(id: &str, language: Language, cwd: &str) -> Value {
    json!({"id": id, "language": language_name(language), "cwd": cwd})
}

async fn create_context(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let id = id_of(&headers)?;
        let req: ContextRequest = parse(&read(body).await?)?;
        let lang = language(req.language.as_deref())?;
        with_box(&state, &id, move |h| {
            let cwd = req
                .cwd
                .clone()
                .unwrap_or_else(|| h.sandbox().channel().default_cwd().to_string());
            let ctx_id = create_in(h, lang, Some(cwd.clone()))?;
            Ok(context_view(&ctx_id, lang, &cwd))
        })
        .await
    }
    .await;
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.text_response(),
    }
}

async fn list_contexts(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let result = async {
        let id = id_of(&headers)?;
        with_box(&state, &id, |h| {
            let default_cwd = h.sandbox().channel().default_cwd().to_string();
            let (_, contexts) = h.parts();
            let mut all: Vec<Value> = contexts
                .iter()
                .map(|(k, live)| {
                    context_view(
                        k,
                        live.language,
                        live.cwd.as_deref().unwrap_or(&default_cwd),
                    )
                })
                .collect();
            // E2B's default python and javascript contexts exist from the start (ours start
            // on first use).
            for l in [Language::Python, Language::JavaScript] {
                let ctx = crate::service::contexts::language_name(l);
                if !contexts.contains_key(ctx) {
                    all.push(context_view(ctx, l, &default_cwd));
                }
            }
            all.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
            Ok(all)
        })
        .await
    }
    .await;
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.text_response(),
    }
}

async fn restart_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(ctx): Path<String>,
) -> Response {
    let result = async {
        let id = id_of(&headers)?;
        with_box(&state, &id, move |h| Ok(restart_in(h, &ctx)?)).await
    }
    .await;
    match result {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.text_response(),
    }
}

async fn delete_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(ctx): Path<String>,
) -> Response {
    let result = async {
        let id = id_of(&headers)?;
        with_box(&state, &id, move |h| Ok(delete_in(h, &ctx)?)).await
    }
    .await;
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.text_response(),
    }
}

#[cfg(test)]
#[path = "interpreter_tests.rs"]
mod tests;
