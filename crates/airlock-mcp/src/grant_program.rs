//! The approver program (`--approver CMD`) asked about the model's `request_network_grant`:
//! the same program, with the same JSON lines, that the box's proxy asks about held
//! connections. A request from the model is `"protocol":"mcp-tool"`, `"reason":
//! "requested-by-model"`, with the model's reason in `message` and no `addrs` (nothing is
//! resolved: the proxy checks the destination when the box connects). A grant made this way
//! lasts the session, so an answer with a time limit, a byte budget or another grant is refused
//! rather than widened silently.

use crate::consent::Consent;
use crate::grant_request::GrantAsk;
use airlock_proxy::approval::{ApprovalRequest, Approver, PendingQueue, ProgramApprover, Verdict};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A running approver program and the queue its answers arrive on.
pub struct GrantProgram {
    program: Arc<ProgramApprover>,
    pending: Arc<PendingQueue>,
}

impl GrantProgram {
    /// Starts `command` (with `sh -c`, on the host, with airlock's privileges).
    pub fn spawn(command: &str) -> Result<GrantProgram, String> {
        let pending = Arc::new(PendingQueue::new());
        let program =
            ProgramApprover::spawn(command, pending.clone()).map_err(|e| e.to_string())?;
        Ok(GrantProgram { program, pending })
    }

    /// Asks about `ask`, waiting at most `deadline`.
    pub async fn ask(&self, ask: &GrantAsk, deadline: Duration) -> Consent {
        let (host, port) = split(&ask.grant);
        let now = SystemTime::now();
        let opened = self.pending.open(|id| ApprovalRequest {
            id,
            protocol: "mcp-tool".into(),
            host,
            port,
            addrs: Vec::new(),
            reason: "requested-by-model".into(),
            rule: None,
            message: format!("the model asks for {}: {}", ask.grant, ask.reason),
            grant: ask.grant.clone(),
            time_ms: epoch_ms(now),
            deadline_ms: epoch_ms(now + deadline),
            // The model asked, through a tool call: no connection, no process.
            process: None,
        });
        let Some((request, answer)) = opened else {
            return Consent::CannotAsk("the approval queue is not usable".into());
        };
        self.program.ask(&request);
        let answer = match tokio::time::timeout(deadline, answer).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => return Consent::No(format!("{} did not answer", self.program.name())),
            Err(_) => {
                self.pending.withdraw(request.id);
                return Consent::NoAnswer(deadline);
            }
        };
        if answer.verdict == Verdict::Deny {
            return Consent::No(format!("{} declined", answer.by));
        }
        if answer.ttl.is_some()
            || answer.byte_budget.is_some()
            || answer.grant.as_ref().is_some_and(|g| *g != ask.grant)
        {
            return Consent::No(format!("{} answered yes with a time limit, a byte budget or another grant, which a grant made through request_network_grant cannot hold (it lasts the session), so it was not made; answer with the request's own grant and no limits", answer.by));
        }
        Consent::Yes
    }
}

/// `NAME:PORT`, `IP:PORT` or `[IPv6]:PORT` as host and port.
fn split(grant: &str) -> (String, u16) {
    let (host, port) = grant.rsplit_once(':').unwrap_or((grant, "0"));
    (
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port.parse().unwrap_or(0),
    )
}

fn epoch_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
