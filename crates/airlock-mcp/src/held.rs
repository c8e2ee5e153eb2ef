//! Held connections asked about through MCP elicitation: under `--approval on-request` with no
//! approver program, a session whose client declared elicitation starts its boxes asking their
//! owner (this session). Each connection the policy does not allow is held by the box's proxy
//! while the person at the client is asked; a yes lets it through (and that destination, for
//! the rest of the box's life), anything else refuses it at once with the usual refusal. The
//! answer reaches the box through its [`ApprovalAnswerer`], so a box busy running the very
//! command that connected is answered all the same.

use crate::consent::{self, Consent};
use crate::server::record_consent;
use crate::wrap::AuditSink;
use airlock_policy::{ApprovalAnswer, ApprovalRequest, ApprovalScope, ApprovalVerdict};
use airlock_runtime::backend::{ApprovalAnswerer, ApprovalSink};
use rmcp::service::Peer;
use rmcp::RoleServer;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Who the audit log says answered.
const BY: &str = "mcp-client";
/// What the audit log's `tool` is for a held connection (no tool asked; the box connected).
const SUBJECT: &str = "held_connection";

/// Asks the session's client about its box's held connections.
pub struct HeldAsker {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    audit: Option<Arc<AuditSink>>,
    /// The running box's answerer (set when a box starts; a later box replaces it).
    answerer: Arc<Mutex<Option<Arc<dyn ApprovalAnswerer>>>>,
}

impl HeldAsker {
    /// Asks through `peer`, on `runtime` (the session's), recording in `audit`.
    pub fn new(
        peer: Peer<RoleServer>,
        runtime: tokio::runtime::Handle,
        audit: Option<Arc<AuditSink>>,
    ) -> HeldAsker {
        HeldAsker {
            peer,
            runtime,
            audit,
            answerer: Arc::new(Mutex::new(None)),
        }
    }

    /// Whether `peer` can be asked at all (it declared form elicitation).
    pub fn can_ask(peer: &Peer<RoleServer>) -> bool {
        consent::can_ask(peer)
    }

    /// The box that now runs answers through `answerer`.
    pub fn attach(&self, answerer: Option<Arc<dyn ApprovalAnswerer>>) {
        *self.answerer.lock().unwrap_or_else(PoisonError::into_inner) = answerer;
    }
}

/// The question for a held connection.
pub fn question(request: &ApprovalRequest) -> String {
    format!(
        "The airlock sandbox is connecting to {}:{} ({}), which its network policy does not allow: {}.\n\nAllow it? A yes lets this destination through ({}) until the sandbox ends.",
        request.host, request.port, request.protocol, request.reason, request.grant
    )
}

/// The answer a person's consent is (`None`: no answer; the proxy refuses it at its deadline).
fn answer_of(consent: &Consent) -> Option<ApprovalAnswer> {
    let verdict = match consent {
        Consent::Yes => ApprovalVerdict::Allow,
        Consent::No(_) | Consent::CannotAsk(_) => ApprovalVerdict::Deny,
        Consent::NoAnswer(_) => return None,
    };
    Some(ApprovalAnswer {
        answer: verdict,
        scope: ApprovalScope::Run,
        ttl_secs: None,
        byte_budget: None,
        grant: None,
    })
}

/// How long is left until `deadline_ms` (milliseconds since the Unix epoch).
fn until(deadline_ms: u128) -> Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    Duration::from_millis(deadline_ms.saturating_sub(now).min(u64::MAX as u128) as u64)
}

impl ApprovalSink for HeldAsker {
    fn requested(&self, request: ApprovalRequest) {
        let (peer, audit, slot) = (
            self.peer.clone(),
            self.audit.clone(),
            Arc::clone(&self.answerer),
        );
        self.runtime.spawn(async move {
            let left = until(request.deadline_ms);
            let consent = consent::ask(&peer, question(&request), left).await;
            record_consent(
                audit.as_deref(),
                SUBJECT,
                &request.grant,
                None,
                BY,
                &consent,
            );
            let answerer = slot.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let (Some(answer), Some(answerer)) = (answer_of(&consent), answerer) else {
                return;
            };
            // The answer crosses to the box's host side (a blocking request there).
            let _ = tokio::task::spawn_blocking(move || {
                // Not pending: it timed out in the proxy meanwhile, and was refused there.
                let _ = answerer.answer(request.id, &answer, BY);
            })
            .await;
        });
    }

    fn withdrawn(&self, _id: u64) {
        // The question's own timeout is the same deadline: it ends by itself.
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
