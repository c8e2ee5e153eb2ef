//! From a create request to what a box is made of: the resolved policy (no host paths, ever)
//! and the working directory of its template.

use crate::requests::CreateRequest;
use crate::ApiError;
use airlock_policy::{
    BackendKind, EnvSection, PolicyFile, ResolveContext, ResolvedPolicy, INSIDE_HOME,
};
use airlock_runtime::RealHost;
use std::collections::BTreeMap;

/// The templates a box can be made from, and each one's working directory.
const TEMPLATES: &[(&str, &str)] = &[("base", "/tmp"), ("user", INSIDE_HOME)];

/// The template's name (default `base`) and its working directory.
pub fn template(name: Option<&str>) -> Result<(String, &'static str), ApiError> {
    let name = name.unwrap_or("base");
    TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, cwd)| ((*n).to_string(), *cwd))
        .ok_or_else(|| {
            ApiError::Invalid(format!(
                "unknown template {name:?}; use \"base\" or \"user\""
            ))
        })
}

/// The policy of a box created by `req`: no workspace and no host path, the request's backend
/// (else `default_backend`), network and limits, its `env` added to the box's environment, the template's working directory.
pub fn resolve_policy(
    req: &mut CreateRequest,
    cwd: &str,
    default_backend: BackendKind,
) -> Result<ResolvedPolicy, ApiError> {
    let asked = req.policy.take().unwrap_or_default();
    if asked.filesystem.is_some() {
        return Err(ApiError::Invalid(
            "policy.filesystem is refused: sandboxes made by the server see no host path; copy files in with PUT /v1/sandboxes/{id}/files".into(),
        ));
    }
    let file = PolicyFile {
        workspace: Some("none".into()),
        backend: Some(req.backend.unwrap_or(default_backend)),
        network: asked.network.unwrap_or_default(),
        limits: asked.limits.unwrap_or_default(),
        env: EnvSection {
            pass: Vec::new(),
            set: std::mem::take(&mut req.env),
        },
        ..Default::default()
    };
    let caller_env = BTreeMap::new();
    let ctx = ResolveContext {
        cwd: "/".into(),
        env: &caller_env,
        host: &RealHost,
    };
    let mut policy = airlock_policy::resolve(&file, &ctx)
        .map_err(|e| ApiError::Invalid(format!("the policy is refused: {e}")))?;
    policy.cwd = cwd.into();
    Ok(policy)
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
