//! `PUT /sandboxes/{id}/network`: a running box's egress changed live, through the seam's
//! `set_egress` (the box's egress proxy takes the new rules for the connections that follow).
//! The rules are E2B's create-time ones ([`super::network`]): `allowOut`, `denyOut`,
//! `allowInternetAccess`. A box created without network has no proxy to reconfigure: 409.
//! E2B's `dnsServers` and `egressProxy` are refused by name, and so are `rules` (request
//! transforms carrying secrets): they are fixed when the sandbox is created.

use super::auth::require_api_key;
use super::error::E2bError;
use super::network::{network_section, NetworkOptions};
use super::DefaultNetwork;
use crate::observer::lock;
use crate::state::AppState;
use airlock_policy::{Egress, NetworkMode};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

/// E2B's `SandboxNetworkUpdateConfig`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkUpdate {
    #[serde(default)]
    pub allow_out: Option<Vec<String>>,
    #[serde(default)]
    pub deny_out: Option<Vec<String>>,
    #[serde(default)]
    pub allow_internet_access: Option<bool>,
    #[serde(default)]
    pub dns_servers: Option<Value>,
    #[serde(default)]
    pub rules: Option<Value>,
    #[serde(default)]
    pub egress_proxy: Option<Value>,
}

/// The egress a box gets from `update`, keeping what E2B's options do not speak of (connection
/// cap, byte budget, host mappings) from its current `egress`.
pub fn updated_egress(current: &Egress, update: &NetworkUpdate) -> Result<Egress, E2bError> {
    if update
        .rules
        .as_ref()
        .is_some_and(|r| !r.is_null() && r.as_object().is_none_or(|m| !m.is_empty()))
    {
        return Err(E2bError::InvalidArgument(
            "network.rules are set when the sandbox is created (they decide which hosts its proxy opens TLS for); airlock does not change them on a running sandbox — leave them out here".into(),
        ));
    }
    for (name, set) in [
        ("dnsServers", update.dns_servers.is_some()),
        ("egressProxy", update.egress_proxy.is_some()),
    ] {
        if set {
            return Err(E2bError::InvalidArgument(format!(
                "network.{name} is not supported by airlock; leave it out"
            )));
        }
    }
    let options = NetworkOptions {
        allow_out: update.allow_out.clone(),
        deny_out: update.deny_out.clone(),
        ..NetworkOptions::default()
    };
    let section = network_section(
        update.allow_internet_access,
        Some(&options),
        DefaultNetwork::Internet,
    )?;
    let mut egress = current.clone();
    egress.allow_domain = section.allow_domain;
    egress.deny_domain = section.deny_domain;
    egress.allow_ip = section.allow_ip;
    egress.deny_ip = section.deny_ip;
    egress.public_internet = section.public_internet == Some(true);
    if section.mode == Some(NetworkMode::None) {
        // Everything denied: the proxy stays, allowing nothing.
        egress.allow_domain.clear();
        egress.allow_ip.clear();
        egress.public_internet = false;
    }
    Ok(egress)
}

/// `PUT /sandboxes/{id}/network`.
pub async fn update(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let run = async move {
        require_api_key(&state.e2b, &headers)?;
        let update: NetworkUpdate = if body.iter().all(u8::is_ascii_whitespace) {
            NetworkUpdate::default()
        } else {
            serde_json::from_slice(&body).map_err(|e| {
                E2bError::InvalidArgument(format!("the network update is malformed: {e}"))
            })?
        };
        tokio::task::spawn_blocking(move || apply(&state, &id, &update))
            .await
            .map_err(|_| E2bError::Internal("the request's worker failed; retry".into()))?
    };
    match run.await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.rest_response(),
    }
}

fn apply(state: &AppState, id: &str, update: &NetworkUpdate) -> Result<(), E2bError> {
    let mut rec = super::control::live_record(state, id)?;
    if rec.policy["network"].as_str() != Some("proxy") {
        return Err(E2bError::FailedPrecondition(format!(
            "sandbox {id} was created without network access: it has no egress proxy whose \
             rules could change; create a sandbox with network (allow_internet_access, or a \
             network.allowOut list) to change its egress later"
        )));
    }
    let current: Egress = serde_json::from_value(rec.policy["egress"].clone()).map_err(|e| {
        E2bError::Internal(format!("the sandbox's stored egress is unreadable: {e}"))
    })?;
    let egress = updated_egress(&current, update)?;
    state
        .manager
        .with_handle(id, |h| h.sandbox().set_egress(&egress))
        .map_err(|e| E2bError::from(state.manager_error(id, e)))?
        .map_err(|e| E2bError::Internal(format!("the box refused the new egress rules: {e}")))?;
    rec.policy["egress"] =
        serde_json::to_value(&egress).map_err(|e| E2bError::Internal(e.to_string()))?;
    lock(&state.store)
        .set_policy(id, &rec.policy)
        .map_err(|e| E2bError::Internal(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
#[path = "network_update_tests.rs"]
mod tests;
