//! The terminal approver of a one-shot run: `airlock run --approval on-request` with no
//! approver program asks on airlock's controlling terminal.

use crate::{RunError, RunOptions};
use airlock_policy::{NetworkMode, ResolvedPolicy};
use airlock_proxy::approval::{Asker, PendingQueue, TerminalApprover};
use std::sync::Arc;

/// The terminal approver, if this run asks there: a proxied box whose policy asks and names
/// no approver program, run with [`RunOptions::ask_on_terminal`]. No controlling terminal then
/// is an error (nobody would be asked).
pub(crate) fn terminal_asker(
    policy: &ResolvedPolicy,
    opts: &RunOptions,
) -> Result<Option<(Arc<TerminalApprover>, Asker)>, RunError> {
    let approval = &policy.egress.approval;
    let asks = policy.network == NetworkMode::Proxy
        && approval.mode.asks_for_network()
        && approval.approver.is_none();
    let Some(ask) = opts.ask_on_terminal.as_ref().filter(|_| asks) else {
        return Ok(None);
    };
    let pending = Arc::new(PendingQueue::new());
    let terminal = TerminalApprover::open(pending.clone(), ask.policy_file.clone())?;
    let asker = Asker {
        approver: terminal.clone(),
        pending,
    };
    Ok(Some((terminal, asker)))
}
