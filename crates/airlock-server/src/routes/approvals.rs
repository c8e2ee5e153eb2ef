//! A sandbox's held connections: `GET /v1/sandboxes/{id}/approvals` lists what its box's
//! proxy is waiting on (what an approver program would be given), `POST
//! /v1/sandboxes/{id}/approvals/{n}` answers one. The answer is checked as the approver
//! program's line is, then carried to the box's host process, whose proxy is the authority:
//! an answer to a request it no longer holds is a 409. Answering takes the API key: a
//! sandbox's token is what the code driving the box holds, and the box's user must not be
//! able to approve its own requests ("the model can ask, only a person or policy can say yes").

use crate::approvals::{Finished, Lookup};
use crate::auth::{require_box, require_key};
use crate::checks::FieldError;
use crate::requests::parse;
use crate::service::sandboxes::audit;
use crate::state::AppState;
use crate::view;
use crate::ApiError;
use airlock_policy::{ApprovalAnswer, ApprovalRequest, ApprovalScope};
use airlock_proxy::approval::{AnswerLine, GrantTarget};
use airlock_runtime::backend::BackendError;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;

/// Who the audit log says answered over the API.
const BY: &str = "api";

/// `GET /v1/sandboxes/{id}/approvals`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    require_box(&state, &headers, &id)?;
    let pending = state
        .blocking(move |state| {
            view::get(&state, &id)?;
            Ok(state.approvals.pending(&id))
        })
        .await?;
    Ok(Json(serde_json::json!({ "approvals": pending })))
}

/// `POST /v1/sandboxes/{id}/approvals/{n}`.
pub async fn answer(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, n)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    // 404 for another sandbox's id before anything is said about the key (as every route).
    require_box(&state, &headers, &id)?;
    let caller = require_key(&state, &headers).map_err(|_| {
        ApiError::Forbidden(
            "answering a held connection takes the API key: a sandbox's token is what drives the box, and a box may not approve its own requests".into(),
        )
    })?;
    let n = n.parse::<u64>().map_err(|_| {
        FieldError::new(
            "{n}",
            format!("give the request's id (a whole number, as listed by GET /v1/sandboxes/{{id}}/approvals), not {n:?}"),
        )
    })?;
    let answer: ApprovalAnswer = parse(&body, false)?;
    check_answer(n, &answer)?;
    state
        .blocking(move |state| {
            view::get(&state, &id)?;
            let request = match state.approvals.lookup(&id, n) {
                Lookup::Waiting(r) => r,
                Lookup::Finished(how) => return Err(finished(&id, n, how)),
                Lookup::Unknown => {
                    return Err(ApiError::NotFound(format!(
                        "sandbox {id} has no approval request {n}; list them with GET /v1/sandboxes/{id}/approvals"
                    )))
                }
            };
            check_grant(&request, &answer)?;
            let sent = state
                .manager
                .inspect(&id, |h| h.sandbox().answer_approval(n, &answer, BY))
                .map_err(|e| state.manager_error(&id, e))?;
            match sent {
                Ok(()) => state.approvals.finish(&id, n, Finished::Answered),
                Err(BackendError::NotPending(_)) => {
                    // It timed out in the proxy before the answer arrived.
                    state.approvals.finish(&id, n, Finished::TimedOut);
                    return Err(finished(&id, n, Finished::TimedOut));
                }
                Err(BackendError::Invalid(m)) => return Err(ApiError::Invalid(m)),
                Err(e) => return Err(ApiError::Internal(e.to_string())),
            }
            let summary = serde_json::json!({
                "approval": n,
                "host": request.host,
                "port": request.port,
                "answer": answer,
            });
            audit(&state, &id, "approval", &caller, summary.clone());
            Ok(Json(summary))
        })
        .await
}

fn finished(id: &str, n: u64, how: Finished) -> ApiError {
    let what = match how {
        Finished::Answered => "was already answered",
        Finished::TimedOut => "timed out (nobody answered before its deadline, so it was refused)",
    };
    ApiError::Conflict(format!(
        "approval request {n} of sandbox {id} {what}; a connection asked again is a new request (see GET /v1/sandboxes/{id}/approvals)"
    ))
}

/// The checks an approver program's line gets (a time to live of 1 s to a day; no `save`,
/// which writes a policy file only the terminal's approver can).
fn check_answer(n: u64, answer: &ApprovalAnswer) -> Result<(), ApiError> {
    if answer.scope == ApprovalScope::Save {
        return Err(FieldError::new(
            "scope",
            "`save` writes the grant to a policy file, which the server does not do; answer `run` (with ttl_secs) and add the rule to the sandbox's policy yourself",
        )
        .into());
    }
    AnswerLine::of(n, answer.clone())
        .into_answer(BY)
        .map_err(|e| ApiError::Invalid(e.to_string()))?;
    Ok(())
}

/// A wider grant must be one and contain the request (refused here with a 400 rather than
/// turned into a refusal by the proxy).
fn check_grant(request: &ApprovalRequest, answer: &ApprovalAnswer) -> Result<(), ApiError> {
    let Some(text) = &answer.grant else {
        return Ok(());
    };
    let grant = GrantTarget::parse(text).map_err(|e| FieldError::new("grant", e.to_string()))?;
    let host = airlock_proxy::rules::parse_host(&request.host)
        .map_err(|e| ApiError::Internal(format!("the held request's host is not valid: {e}")))?;
    if !grant.covers(&host, request.port) {
        return Err(FieldError::new(
            "grant",
            format!(
                "{grant} does not cover {}:{}; answer with the request's own grant ({}) or a range that contains it",
                request.host, request.port, request.grant
            ),
        )
        .into());
    }
    Ok(())
}
