//! A pool's policy: what a native create request naming the pool's backend, template, network
//! and limits (and nothing per-sandbox) resolves to, through the same code as that request.

use super::spec::PoolSpec;
use crate::requests::{CreateRequest, RequestPolicy};
use crate::template_catalog::TemplateCatalog;
use airlock_policy::{BackendKind, NetworkMode, NetworkSection, ResolvedPolicy};

/// The policy every box of the pool is started under. Errors: a sentence naming the pool and
/// what the server refused (an unknown template, a limit out of range, a backend not built).
pub fn resolve(
    spec: &PoolSpec,
    default_backend: BackendKind,
    catalog: &TemplateCatalog,
) -> Result<ResolvedPolicy, String> {
    let refused = |what: String| format!("--pool {}: {what}", spec.name);
    let limits = if spec.limits.is_empty() {
        None
    } else {
        Some(
            serde_json::from_value(serde_json::Value::Object(spec.limits.clone()))
                .map_err(|e| refused(format!("its limits are refused: {e}")))?,
        )
    };
    let network = NetworkSection {
        mode: Some(spec.network),
        ..NetworkSection::default()
    };
    let mut req = CreateRequest {
        template: spec.template.clone(),
        backend: Some(spec.backend.unwrap_or(default_backend).to_string()),
        policy: Some(RequestPolicy {
            network: (spec.network != NetworkMode::None).then_some(network),
            limits,
            filesystem: None,
        }),
        ..CreateRequest::default()
    };
    let (_, cwd, root) = crate::template::pick(req.template.as_deref(), catalog)
        .map_err(|e| refused(e.to_string()))?;
    req.check().map_err(|e| refused(e.to_string()))?;
    let mut policy = crate::template::resolve_policy(&mut req, &cwd, default_backend)
        .map_err(|e| refused(e.to_string()))?;
    crate::template::apply(&mut policy, &root).map_err(|e| refused(e.to_string()))?;
    Ok(policy)
}
