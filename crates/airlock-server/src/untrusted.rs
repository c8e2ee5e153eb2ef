//! The request-body parsers as one entry point per route, for fuzzing (`fuzz/`) and tests: each
//! takes the raw bytes a client sent and returns what the server would act on, or its error.

use crate::requests::{parse, CreateRequest, ExecRequest, TimeoutRequest};
use crate::ApiError;

/// `POST /v1/sandboxes`: the body, the template, and the policy the box would get.
pub fn create_body(body: &[u8]) -> Result<(), ApiError> {
    let mut req: CreateRequest = parse(body, true)?;
    let (_, cwd) = crate::template::template(req.template.as_deref())?;
    crate::template::resolve_policy(&mut req, cwd)?;
    Ok(())
}

/// `POST /v1/sandboxes/{id}/exec`.
pub fn exec_body(body: &[u8]) -> Result<(), ApiError> {
    parse::<ExecRequest>(body, false).map(|_| ())
}

/// `POST /v1/sandboxes/{id}/timeout`.
pub fn timeout_body(body: &[u8]) -> Result<(), ApiError> {
    parse::<TimeoutRequest>(body, false).map(|_| ())
}
