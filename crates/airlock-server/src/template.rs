//! From a create request to what a box is made of: the resolved policy (no host paths, ever)
//! and the working directory of its template.

use crate::checks::FieldError;
use crate::requests::CreateRequest;
use crate::ApiError;
use airlock_policy::{
    BackendKind, EnvSection, NetworkMode, PolicyFile, ResolveContext, ResolvedPolicy, SecretEntry,
    SecretSource, SecretValue, INSIDE_HOME,
};
use airlock_proxy::rules::EgressRules;
use airlock_runtime::RealHost;
use std::collections::BTreeMap;

/// The templates a box can be made from, and each one's working directory.
const TEMPLATES: &[(&str, &str)] = &[("base", "/tmp"), ("user", INSIDE_HOME)];

/// The built-in templates' names (the host's system dirs).
pub const BUILTIN: &[&str] = &["base", "user"];

/// The template a create request names: a stored one (by name or alias) with its working
/// directory (the template's own, else the user's home), else a built-in one. Unknown: a 400
/// naming every template that exists.
pub fn pick(
    name: Option<&str>,
    catalog: &crate::template_catalog::TemplateCatalog,
) -> Result<(String, String, airlock_runtime::backend::Template), ApiError> {
    let asked = name.unwrap_or("base");
    match catalog.lookup(asked) {
        Ok(Some(t)) => return Ok((asked.to_string(), INSIDE_HOME.to_string(), t)),
        Ok(None) => {}
        Err(why) => return Err(FieldError::new("template", why).into()),
    }
    match template(name) {
        Ok((n, cwd)) => Ok((n, cwd.to_string(), airlock_runtime::backend::Template::Host)),
        Err(_) => Err(FieldError::new(
            "template",
            format!(
                "no template {asked:?}; the ones that exist are: {}",
                catalog.known(BUILTIN).join(", ")
            ),
        )
        .into()),
    }
}

/// Puts a picked template under a resolved policy.
pub fn apply(
    policy: &mut ResolvedPolicy,
    template: &airlock_runtime::backend::Template,
) -> Result<(), ApiError> {
    airlock_template::apply_template(policy, template)
        .map_err(|e| FieldError::new("template", e.to_string()).into())
}

/// The template's name (default `base`) and its working directory.
pub fn template(name: Option<&str>) -> Result<(String, &'static str), ApiError> {
    let name = name.unwrap_or("base");
    TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, cwd)| ((*n).to_string(), *cwd))
        .ok_or_else(|| {
            crate::checks::FieldError::new(
                "template",
                format!("use \"base\" or \"user\", not {name:?}"),
            )
            .into()
        })
}

/// The policy of a box created by `req`: no workspace and no host path, the request's backend
/// (else `default_backend`), network and limits, its `env` added to the box's environment, the template's working directory.
pub fn resolve_policy(
    req: &mut CreateRequest,
    cwd: &str,
    default_backend: BackendKind,
) -> Result<ResolvedPolicy, ApiError> {
    if let Some(name) = req.env.keys().find(|k| req.secrets.contains_key(*k)) {
        // Two parts of the request claim one variable (a secret's holds its placeholder).
        return Err(ApiError::Conflict(format!(
            "env.{name} and secrets.{name} name the same variable: a secret's variable holds its placeholder inside the box; drop one of them"
        )));
    }
    let asked = req.policy.take().unwrap_or_default();
    if asked.filesystem.is_some() {
        return Err(ApiError::Invalid(
            "policy.filesystem is refused: sandboxes made by the server see no host path; copy files in with PUT /v1/sandboxes/{id}/files".into(),
        ));
    }
    let file = PolicyFile {
        workspace: Some("none".into()),
        backend: Some(req.backend()?.unwrap_or(default_backend)),
        network: asked.network.unwrap_or_default(),
        limits: asked.limits.unwrap_or_default(),
        env: EnvSection {
            pass: Vec::new(),
            set: std::mem::take(&mut req.env),
        },
        secrets: std::mem::take(&mut req.secrets)
            .into_iter()
            .map(|(name, s)| {
                let entry = SecretEntry {
                    hosts: s.hosts,
                    from: SecretSource::Value(SecretValue::new(s.value.into_bytes())),
                    body: s.body,
                };
                (name, entry)
            })
            .collect(),
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
    if policy.network == NetworkMode::Host {
        // A server's boxes run code for API callers: the host's unfiltered network (its
        // loopback services, the metadata address, the LAN) is never theirs to ask for.
        return Err(FieldError::new(
            "policy.network.mode",
            "\"host\" is refused over the API: a server's boxes never get the host's unfiltered network; use \"proxy\" with allow_domain for what the box may reach, or \"none\"",
        )
        .into());
    }
    if policy.egress.approval.approver.is_some() {
        // A program named here would run on the server's host with the server's privileges.
        return Err(FieldError::new(
            "policy.network.approver",
            "is refused over the API: an approver program runs on the server's host, so only whoever starts the server may name one; leave it out",
        )
        .into());
    }
    if policy.egress.approval.mode.asks_for_network()
        && !matches!(
            policy.backend,
            BackendKind::Native | BackendKind::Gvisor | BackendKind::Microvm
        )
    {
        // The question crosses the box's host process (native, gVisor) or comes straight from
        // the microVM's proxy in the server; a wasm box has no network to ask about.
        return Err(FieldError::new(
            "policy.network.approval",
            format!(
                "\"{}\" is not offered for {} boxes over the API (held connections are answered over the API on native, gvisor and microvm boxes); use \"never\" or another backend",
                policy.egress.approval.mode, policy.backend
            ),
        )
        .into());
    }
    if policy.network == NetworkMode::Proxy {
        // The box's proxy parses these when the box starts; a bad one is the caller's error, so
        // it is refused here (400) rather than failing the box (500).
        let e = &policy.egress;
        EgressRules::from_egress(e)
            .map_err(|err| FieldError::new("policy.network", err.to_string()))?;
    }
    policy.cwd = cwd.into();
    Ok(policy)
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
