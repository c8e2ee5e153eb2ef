//! The proxy's side of approvals: a refused connection that may be asked about is held while
//! the approver is asked, until an answer or the deadline; every step is an audit event
//! (`decision: "ask"`, with its `approval` note).

use super::answer::{Answer, Verdict};
use super::approver::Approver;
use super::askable::{askable, GrantTarget};
use super::error::ApprovalError;
use super::grants::{epoch_ms, Grant, Grants};
use super::pending::PendingQueue;
use super::program::ProgramApprover;
use super::request::{ApprovalRequest, Peer};
use crate::audit::AuditLog;
use crate::decision::{decide_off_loop, EgressDecision, Resolver};
use crate::rules::{parse_host, EgressRules, Host};
use airlock_policy::ApprovalPolicy;
use airlock_policy::{ApprovalNote, ApprovalScope, ApprovalStage};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Held connections, their approver, and the grants answers made. One per box.
pub struct ApprovalGate {
    approver: Arc<dyn Approver>,
    pending: Arc<PendingQueue>,
    grants: Grants,
    timeout: Duration,
}

/// The gate for `policy`: `None` under `never`; the approver program if the policy names one,
/// else `asker` (the terminal, the server); neither is an error (fail closed: a policy that
/// asks must have someone to ask).
pub fn gate_for(
    policy: &ApprovalPolicy,
    asker: Option<Asker>,
) -> Result<Option<Arc<ApprovalGate>>, ApprovalError> {
    if !policy.mode.asks_for_network() {
        return Ok(None);
    }
    let timeout = Duration::from_millis(policy.timeout_ms);
    let (approver, pending): (Arc<dyn Approver>, _) = match (&policy.approver, asker) {
        (Some(cmd), _) => {
            let pending = Arc::new(PendingQueue::new());
            (ProgramApprover::spawn(cmd, pending.clone())?, pending)
        }
        (None, Some(asker)) => (asker.approver, asker.pending),
        (None, None) => return Err(no_approver(policy)),
    };
    Ok(Some(Arc::new(ApprovalGate::new(
        approver, pending, timeout,
    ))))
}

/// An approver that the box's owner provides (the terminal, the server), with the queue it
/// answers through.
#[derive(Clone)]
pub struct Asker {
    pub approver: Arc<dyn Approver>,
    pub pending: Arc<PendingQueue>,
}

/// Checks, before anything starts, that [`gate_for`] will have someone to ask: an approver
/// program in `policy`, or (`has_asker`) one the box's owner provides.
pub fn check_approver(policy: &ApprovalPolicy, has_asker: bool) -> Result<(), ApprovalError> {
    if policy.mode.asks_for_network() && policy.approver.is_none() && !has_asker {
        return Err(no_approver(policy));
    }
    Ok(())
}

fn no_approver(policy: &ApprovalPolicy) -> ApprovalError {
    ApprovalError::NoApprover {
        mode: policy.mode.to_string(),
    }
}

/// A connection the rules refused, as the gate reconsiders it.
pub(crate) struct Held<'a> {
    pub protocol: &'static str,
    pub rules: Arc<EgressRules>,
    pub resolver: Arc<dyn Resolver>,
    pub host_own: &'a [IpAddr],
    pub audit: &'a AuditLog,
    pub start: Instant,
    /// Who can say which process of the box holds the connection, if anyone can.
    pub peer: Option<Peer>,
}

/// A yes: the decision to act on (allowed) and the grant its bytes count against.
pub(crate) struct Approved {
    pub decision: EgressDecision,
    pub grant: Arc<Grant>,
}

impl ApprovalGate {
    /// A gate asking `approver`, which answers through `pending`; a held connection waits at
    /// most `timeout`.
    pub fn new(
        approver: Arc<dyn Approver>,
        pending: Arc<PendingQueue>,
        timeout: Duration,
    ) -> ApprovalGate {
        ApprovalGate {
            approver,
            pending,
            grants: Grants::default(),
            timeout,
        }
    }

    /// The requests waiting for an answer.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        self.pending.list()
    }

    /// Answers request `id`.
    pub fn answer(&self, id: u64, answer: Answer) -> Result<(), ApprovalError> {
        self.pending.answer(id, answer)
    }

    /// The grants made for this run that are not known to have ended.
    pub fn grants(&self) -> Vec<Arc<Grant>> {
        self.grants.list()
    }

    /// Reconsiders a refusal: a live grant that covers it, or else the approver's answer,
    /// may allow it. `None`: refused (not askable, denied, or no answer in time).
    pub(crate) async fn reconsider(
        &self,
        held: &Held<'_>,
        refusal: &EgressDecision,
    ) -> Option<Approved> {
        let target = askable(refusal, held.host_own)?;
        let EgressDecision::Deny {
            host,
            port,
            reason,
            rule,
            message,
        } = refusal
        else {
            return None;
        };
        let (host, port) = (host.as_str(), *port);
        let parsed = parse_host(host).ok()?;
        let (found, ended) = self.grants.find(&parsed, port, Instant::now());
        for g in ended {
            self.note(
                held,
                host,
                port,
                ApprovalStage::Expired,
                &g.target,
                &g,
                None,
            );
        }
        if let Some(grant) = found {
            let d = self.decide_under(held, &grant.target, host, port).await;
            if d.is_allowed() {
                return Some(approved(d, grant));
            }
        }
        // Asked only if the grant would really allow it (a name that resolves to a private
        // address stays refused, and nobody is bothered about it).
        let tentative = self.decide_under(held, &target, host, port).await;
        let EgressDecision::Allow { addrs, .. } = &tentative else {
            return None;
        };
        let process = match &held.peer {
            Some(peer) => peer.name().await,
            None => None,
        };
        let now = SystemTime::now();
        let waiting = self.pending.wait(|id| ApprovalRequest {
            id,
            protocol: held.protocol.to_string(),
            host: host.to_string(),
            port,
            addrs: addrs.clone(),
            reason: serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            rule: rule.clone(),
            message: message.clone(),
            grant: target.to_string(),
            time_ms: epoch_ms(now),
            deadline_ms: epoch_ms(now + self.timeout),
            process,
        })?;
        let id = waiting.id;
        if waiting.is_new {
            let mut ev = self.event(held, host, port, "approval-requested");
            ev.message = Some(match &waiting.request.process {
                Some(who) => format!(
                    "held for approval #{id}: asked {}; the box's process holding it: {who}",
                    self.approver.name()
                ),
                None => format!("held for approval #{id}: asked {}", self.approver.name()),
            });
            ev.approval = Some(note(id, ApprovalStage::Requested, None, Some(&target)));
            held.audit.record(ev);
            self.approver.ask(&waiting.request);
        }
        let answer = match tokio::time::timeout(self.timeout, waiting.answer).await {
            Ok(Ok(answer)) => answer,
            // The request was withdrawn by another connection held for it.
            Ok(Err(_)) => return None,
            Err(_) => {
                if self.pending.withdraw(id) {
                    self.approver.withdrawn(id);
                    let mut ev = self.event(held, host, port, "approval-timeout");
                    ev.message = Some(format!(
                        "approval #{id}: no answer from {} within {} ms; refused",
                        self.approver.name(),
                        self.timeout.as_millis()
                    ));
                    ev.approval = Some(note(id, ApprovalStage::TimedOut, None, Some(&target)));
                    held.audit.record(ev);
                }
                return None;
            }
        };
        let record = waiting.is_new;
        if answer.verdict == Verdict::Deny {
            if record {
                self.denied(held, host, port, id, &answer, &target, None);
            }
            return None;
        }
        let chosen = match chosen_grant(&answer, &target, &parsed, host, port) {
            Ok(c) => c,
            Err(e) => {
                if record {
                    self.denied(held, host, port, id, &answer, &target, Some(e.to_string()));
                }
                return None;
            }
        };
        let decision = if chosen == target {
            tentative
        } else {
            self.decide_under(held, &chosen, host, port).await
        };
        if !decision.is_allowed() {
            if record {
                let why = format!(
                    "the grant {chosen} does not allow it: {}",
                    decision.message().unwrap_or("")
                );
                self.denied(held, host, port, id, &answer, &chosen, Some(why));
            }
            return None;
        }
        let grant = Arc::new(Grant::new(id, chosen.clone(), &answer, Instant::now()));
        if record {
            if answer.scope != ApprovalScope::Once {
                self.grants.add(grant.clone());
            }
            self.note(
                held,
                host,
                port,
                ApprovalStage::Allowed,
                &chosen,
                &grant,
                None,
            );
        }
        Some(approved(decision, grant))
    }

    async fn decide_under(
        &self,
        held: &Held<'_>,
        grant: &GrantTarget,
        host: &str,
        port: u16,
    ) -> EgressDecision {
        let rules = Arc::new(grant.widen(&held.rules));
        decide_off_loop(
            rules,
            held.resolver.clone(),
            held.host_own.to_vec(),
            host,
            port,
        )
        .await
    }

    fn event(
        &self,
        held: &Held<'_>,
        host: &str,
        port: u16,
        reason: &str,
    ) -> crate::audit::NetEvent {
        crate::server::event(
            held.protocol,
            host,
            port,
            "ask",
            Some(reason),
            None,
            None,
            held.start,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn denied(
        &self,
        held: &Held<'_>,
        host: &str,
        port: u16,
        id: u64,
        answer: &Answer,
        target: &GrantTarget,
        why: Option<String>,
    ) {
        let mut ev = self.event(held, host, port, "approval-denied");
        ev.message = Some(match why {
            Some(why) => format!(
                "approval #{id}: {} answered yes, but {why}; refused",
                answer.by
            ),
            None => format!("approval #{id}: denied by {}", answer.by),
        });
        let mut n = note(id, ApprovalStage::Denied, Some(&answer.by), Some(target));
        n.scope = Some(answer.scope);
        ev.approval = Some(n);
        held.audit.record(ev);
    }

    /// Records a grant made (`Allowed`) or ended (`Expired`).
    #[allow(clippy::too_many_arguments)]
    fn note(
        &self,
        held: &Held<'_>,
        host: &str,
        port: u16,
        stage: ApprovalStage,
        target: &GrantTarget,
        grant: &Grant,
        message: Option<String>,
    ) {
        let reason = match stage {
            ApprovalStage::Expired => "grant-expired",
            _ => "approved",
        };
        let mut ev = self.event(held, host, port, reason);
        let lasts = match (grant.scope, grant.expires_ms) {
            (ApprovalScope::Once, _) => "this connection".to_string(),
            (_, Some(_)) => format!(
                "{} s",
                grant.remaining(Instant::now()).map_or(0, |d| d.as_secs())
            ),
            (_, None) => "until the box ends".to_string(),
        };
        ev.message = message.or_else(|| {
            Some(match stage {
                ApprovalStage::Expired => format!(
                    "approval #{}: the grant {target} ended ({} bytes moved); new connections are asked about again",
                    grant.id,
                    grant.bytes_used()
                ),
                _ => format!(
                    "approval #{}: {target} granted by {} for {lasts}",
                    grant.id, grant.by
                ),
            })
        });
        let mut n = note(grant.id, stage, Some(&grant.by), Some(target));
        n.scope = Some(grant.scope);
        n.expires_ms = grant.expires_ms;
        n.byte_budget = grant.byte_budget;
        ev.approval = Some(n);
        held.audit.record(ev);
    }
}

fn note(
    id: u64,
    stage: ApprovalStage,
    by: Option<&str>,
    grant: Option<&GrantTarget>,
) -> ApprovalNote {
    ApprovalNote {
        id,
        stage,
        by: by.map(str::to_string),
        grant: grant.map(|g| g.to_string()),
        scope: None,
        expires_ms: None,
        byte_budget: None,
    }
}

/// The grant an allowing answer makes: the request's own, or the one it names if that
/// contains the request.
fn chosen_grant(
    answer: &Answer,
    suggested: &GrantTarget,
    parsed: &Host,
    host: &str,
    port: u16,
) -> Result<GrantTarget, ApprovalError> {
    let Some(text) = &answer.grant else {
        return Ok(suggested.clone());
    };
    let chosen = GrantTarget::parse(text)?;
    if !chosen.covers(parsed, port) {
        return Err(ApprovalError::GrantDoesNotCover {
            grant: chosen.to_string(),
            host: host.to_string(),
            port,
            suggested: suggested.to_string(),
        });
    }
    Ok(chosen)
}

/// The allowed decision, naming the approval that allowed it as its rule.
fn approved(decision: EgressDecision, grant: Arc<Grant>) -> Approved {
    let decision = match decision {
        EgressDecision::Allow {
            host, port, addrs, ..
        } => EgressDecision::Allow {
            host,
            port,
            addrs,
            rule: format!("approval #{} ({}, by {})", grant.id, grant.target, grant.by),
        },
        deny => deny,
    };
    Approved { decision, grant }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
