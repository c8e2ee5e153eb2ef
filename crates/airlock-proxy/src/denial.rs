//! A refusal as the structured value the agent can act on ([`Denial`]): what was refused, the
//! rule, and the grant that would allow it (the approver's grant string, and the flag that
//! adds it to a policy). Only what an approver could grant is offered: a deny rule, a
//! malformed or unresolvable name, and a private, loopback or metadata address have no grant.

use crate::approval::{askable, GrantTarget};
use crate::decision::EgressDecision;
use airlock_policy::{Denial, DenialKind};
use std::net::IpAddr;

/// The denial a refused decision records; `None` for an allowed one. `host_own` are this
/// host's own addresses (never grantable).
pub fn denial_of(decision: &EgressDecision, host_own: &[IpAddr]) -> Option<Denial> {
    let EgressDecision::Deny {
        host,
        port,
        reason,
        rule,
        ..
    } = decision
    else {
        return None;
    };
    let grant = askable(decision, host_own);
    Some(Denial {
        kind: DenialKind::Network,
        what: match host.contains(':') {
            true => format!("[{host}]:{port}"),
            false => format!("{host}:{port}"),
        },
        reason: serde_json::to_value(reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "denied".into()),
        rule: rule.clone(),
        flag: grant.as_ref().map(flag_of),
        grant: grant.map(|g| g.to_string()),
    })
}

/// The policy flag that adds `grant`.
pub fn flag_of(grant: &GrantTarget) -> String {
    match grant {
        GrantTarget::Host { .. } => format!("--allow-domain {grant}"),
        GrantTarget::Range(_) => format!("--allow-ip {grant}"),
    }
}

/// The denial of a connection refused because `max` were open at once.
pub fn too_many_connections(max: usize) -> Denial {
    Denial {
        kind: DenialKind::Limit,
        what: "connections".into(),
        reason: "too-many-connections".into(),
        rule: Some(format!("max_connections {max}")),
        grant: None,
        flag: Some("--max-connections".into()),
    }
}

#[cfg(test)]
#[path = "denial_tests.rs"]
mod tests;
