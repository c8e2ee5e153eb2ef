//! Asking the person at the MCP client, through MCP elicitation (`elicitation/create`): before
//! a command runs under `--approval untrusted`, and before a grant the model asked for is
//! made. Only a person answers: a client that did not declare elicitation is never assumed to
//! have said yes.

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use rmcp::RoleServer;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// Accepted.
    Yes,
    /// Declined or dismissed.
    No(String),
    /// Nobody answered within the deadline (a no).
    NoAnswer(Duration),
    /// The client cannot be asked (it did not declare form elicitation), or asking failed.
    CannotAsk(String),
}

/// Whether the client declared form elicitation.
pub fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// Asks `message` as a yes/no form (no fields: accept is yes), waiting at most `deadline`.
pub async fn ask(peer: &Peer<RoleServer>, message: String, deadline: Duration) -> Consent {
    if !can_ask(peer) {
        return Consent::CannotAsk("the MCP client did not declare elicitation".into());
    }
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    };
    match peer
        .create_elicitation_with_timeout(params, Some(deadline))
        .await
    {
        Ok(r) => match r.action {
            ElicitationAction::Accept => Consent::Yes,
            ElicitationAction::Decline => Consent::No("the user declined".into()),
            // Cancel, and any action a later protocol adds: not a yes.
            _ => Consent::No("the user dismissed the question".into()),
        },
        Err(rmcp::ServiceError::Timeout { .. }) => Consent::NoAnswer(deadline),
        Err(e) => Consent::CannotAsk(format!("asking through MCP elicitation failed: {e}")),
    }
}

/// The question before a command runs (`untrusted`). `what` is the command or code as the
/// model sent it (cut to a readable length).
pub fn run_question(tool: &str, what: &str) -> String {
    const MAX: usize = 2000;
    let shown: String = what.chars().take(MAX).collect();
    let cut = if what.chars().count() > MAX {
        " […cut]"
    } else {
        ""
    };
    format!(
        "The model wants to run this in the airlock sandbox ({tool}):\n\n{shown}{cut}\n\nRun it?"
    )
}

/// The question before a grant the model asked for is made.
pub fn grant_question(grant: &str, reason: &str) -> String {
    format!("The model asks for network access from the airlock sandbox to {grant} (for the rest of this session).\n\nIts reason: {reason}\n\nAllow it?")
}

#[cfg(test)]
#[path = "consent_tests.rs"]
mod tests;
