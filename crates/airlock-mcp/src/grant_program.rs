//! The approver program (`--approver CMD`) asked about the model's `request_network_grant`:
//! the same program, with the same JSON lines, that the box's proxy asks about held
//! connections. A request from the model is `"protocol":"mcp-tool"`, `"reason":
//! "requested-by-model"`, with the model's reason in `message` and no `addrs` (nothing is
//! resolved: the proxy checks the destination when the box connects). A grant made this way
//! lasts the session, so an answer with a time limit, a byte budget or another grant is refused
//! rather than widened silently.

use crate::consent::Consent;
use crate::fs_grant::FsGrantAsk;
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
        let message = format!("the model asks for {}: {}", ask.grant, ask.reason);
        let request = Asked {
            protocol: "mcp-tool",
            host,
            port,
            message,
            grant: &ask.grant,
        };
        self.ask_line(request, deadline).await
    }

    /// Asks about a filesystem grant: `"protocol":"filesystem"`, no host (an empty `host` and
    /// port 0, so a program that allows by host allows none), the grant as `read:PATH` or
    /// `write:PATH`.
    pub async fn ask_filesystem(&self, ask: &FsGrantAsk, deadline: Duration) -> Consent {
        let grant = ask.grant();
        let request = Asked {
            protocol: "filesystem",
            host: String::new(),
            port: 0,
            message: format!(
                "the model asks to {}: {}",
                grant.replacen(':', " ", 1),
                ask.reason
            ),
            grant: &grant,
        };
        self.ask_line(request, deadline).await
    }

    async fn ask_line(&self, asked: Asked<'_>, deadline: Duration) -> Consent {
        let now = SystemTime::now();
        let opened = self.pending.open(|id| ApprovalRequest {
            id,
            protocol: asked.protocol.into(),
            host: asked.host,
            port: asked.port,
            addrs: Vec::new(),
            reason: "requested-by-model".into(),
            rule: None,
            message: asked.message,
            grant: asked.grant.to_string(),
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
            || answer.grant.as_ref().is_some_and(|g| g != asked.grant)
        {
            return Consent::No(format!("{} answered yes with a time limit, a byte budget or another grant, which a grant the model asked for cannot hold (it lasts the session), so it was not made; answer with the request's own grant and no limits", answer.by));
        }
        Consent::Yes
    }
}

/// One request line's own parts.
struct Asked<'a> {
    protocol: &'static str,
    host: String,
    port: u16,
    message: String,
    grant: &'a str,
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
