//! The terminal approver of a one-shot run: `airlock run --approval on-request` with no
//! approver program asks on airlock's controlling terminal. The native box's proxy asks it
//! directly; other backends' boxes ask through the seam ([`OwnerTerminal`]).

use crate::{RunError, RunOptions};
use airlock_policy::{ApprovalAnswer, ApprovalRequest, NetworkMode, ResolvedPolicy};
use airlock_proxy::approval::{
    Answer, Approver, Asker, PendingQueue, TerminalApprover, TerminalFloor,
};
use airlock_runtime::attached::AttachedAsker;
use airlock_runtime::backend::{ApprovalAnswerer, ApprovalSink};
use std::sync::{Arc, Mutex, PoisonError};

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

/// The terminal approver on airlock's side of the seam, for an attached box whose proxy is not
/// this process's (gVisor's host process, the microVM's host side): the box's requests are
/// asked on the terminal under ids of this side's own, and each answer is handed back under the
/// box's id by a thread that waits for it, the moment it is given. An "allow and save" has
/// written the policy file by the time its answer leaves.
pub struct OwnerTerminal {
    terminal: Arc<TerminalApprover>,
    pending: Arc<PendingQueue>,
    floor: Arc<TerminalFloor>,
    /// (the box's id, this side's id) of each request being asked (an answered one leaves).
    waiting: Arc<Mutex<Vec<(u64, u64)>>>,
    answerer: Arc<Mutex<Option<Arc<dyn ApprovalAnswerer>>>>,
}

impl OwnerTerminal {
    /// Opens airlock's controlling terminal for a run under `policy`, if the run asks there
    /// ([`RunOptions::ask_on_terminal`]); no controlling terminal is an error.
    pub fn for_run(
        policy: &ResolvedPolicy,
        opts: &RunOptions,
    ) -> Result<Option<Arc<OwnerTerminal>>, RunError> {
        let Some((terminal, asker)) = terminal_asker(policy, opts)? else {
            return Ok(None);
        };
        Ok(Some(Arc::new(OwnerTerminal {
            floor: terminal.floor(),
            terminal,
            pending: asker.pending,
            waiting: Arc::new(Mutex::new(Vec::new())),
            answerer: Arc::new(Mutex::new(None)),
        })))
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        lock_waiting(&self.waiting)
    }
}

fn lock_waiting(w: &Mutex<Vec<(u64, u64)>>) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
    w.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An answer given here, as the box takes it (`save` stays `save`: the file is written).
fn crossing(a: &Answer) -> ApprovalAnswer {
    ApprovalAnswer {
        answer: a.verdict,
        scope: a.scope,
        ttl_secs: a.ttl.map(|t| t.as_secs()),
        byte_budget: a.byte_budget,
        grant: a.grant.clone(),
    }
}

impl ApprovalSink for OwnerTerminal {
    fn requested(&self, request: ApprovalRequest) {
        let remote = request.id;
        let Some((local, answer)) = self.pending.open(|id| ApprovalRequest { id, ..request })
        else {
            return;
        };
        // The box asks once per destination, so this side's queue never joins two of them.
        self.waiting().push((remote, local.id));
        let slot = Arc::clone(&self.answerer);
        let waiting = Arc::clone(&self.waiting);
        // A request withdrawn here drops its sender, which ends the thread.
        let waited = std::thread::Builder::new()
            .name("airlock-answer".into())
            .spawn(move || {
                let Ok(a) = answer.blocking_recv() else {
                    return;
                };
                lock_waiting(&waiting).retain(|(r, _)| *r != remote);
                let answerer = slot.lock().unwrap_or_else(PoisonError::into_inner).clone();
                if let Some(answerer) = answerer {
                    // Not pending: it timed out in the box's proxy meanwhile, refused there.
                    let _ = answerer.answer(remote, &crossing(&a), &a.by);
                }
            });
        if waited.is_err() {
            let _ = self.pending.answer(
                local.id,
                Answer::deny("terminal (cannot wait for the answer)"),
            );
            return;
        }
        self.terminal.ask(&local);
    }

    fn withdrawn(&self, id: u64) {
        let mut waiting = self.waiting();
        if let Some(i) = waiting.iter().position(|(remote, _)| *remote == id) {
            let (_, local) = waiting.remove(i);
            self.pending.withdraw(local);
            self.terminal.withdrawn(local);
        }
    }
}

impl AttachedAsker for OwnerTerminal {
    fn attach(&self, answerer: Option<Arc<dyn ApprovalAnswerer>>) {
        *self.answerer.lock().unwrap_or_else(PoisonError::into_inner) = answerer;
    }

    fn asking(&self) -> bool {
        self.floor.asking()
    }

    fn relay_turn(&self, relay: &mut dyn FnMut()) -> bool {
        match self.floor.relay_turn() {
            Some(_turn) => {
                relay();
                true
            }
            None => false,
        }
    }

    fn close(&self) {
        self.terminal.close();
    }
}
