//! Deciding off the proxy's event loop (resolution may block in `getaddrinfo`).

use super::decide::decide;
use super::outcome::{DenyReason, EgressDecision};
use super::resolver::Resolver;
use crate::rules::EgressRules;
use std::net::IpAddr;
use std::sync::Arc;

/// [`decide`] on the blocking pool; an internal failure there is a refusal.
pub(crate) async fn decide_off_loop(
    rules: Arc<EgressRules>,
    resolver: Arc<dyn Resolver>,
    host_own: Vec<IpAddr>,
    host: &str,
    port: u16,
) -> EgressDecision {
    let host_s = host.to_string();
    match tokio::task::spawn_blocking(move || {
        decide(&rules, &host_s, port, resolver.as_ref(), &host_own)
    })
    .await
    {
        Ok(d) => d,
        Err(_) => EgressDecision::Deny {
            host: host.to_string(),
            port,
            reason: DenyReason::ResolveFailed,
            rule: None,
            message: format!(
                "{host}:{port} could not be checked (internal error); nothing was connected"
            ),
        },
    }
}
