//! One running microVM box behind the seam. Dropping it (or `kill`) ends QEMU; nothing of the
//! box exists on the host besides the QEMU process and its descriptors, so nothing is left.

use crate::vm::Vm;
use airlock_policy::{BackendKind, Egress};
use airlock_proxy::server::ProxyHandle;
use airlock_runtime::backend::{
    ApprovalAnswerer, BackendError, BoxEnd, BoxInstance, Capabilities, Checkpoint, CheckpointKind,
    CheckpointOptions, CommandDefaults, Usage,
};
use airlock_runtime::Receipt;
use serde_json::json;
use std::os::unix::net::UnixStream;

/// A running microVM box.
pub struct MicrovmBox {
    pub(crate) vm: Vm,
    pub(crate) receipt: Receipt,
    pub(crate) defaults: CommandDefaults,
    pub(crate) agent: Option<UnixStream>,
    pub(crate) proxy: Option<ProxyHandle>,
    /// The init's control port.
    pub(crate) ctl: Option<UnixStream>,
    /// Whether the box has 9p shares, detached around a checkpoint.
    pub(crate) has_shares: bool,
    /// Whether its proxy holds secrets: such a box is never checkpointed (the CA its guest
    /// trusts is made for this box and would not be there after a restore).
    pub(crate) holds_secrets: bool,
    /// Held connections its owner answers (`None`: it does not ask the owner).
    pub(crate) approvals: Option<std::sync::Arc<airlock_proxy::approval::PendingQueue>>,
    /// The protected paths made empty on the host for this box, removed when it ends.
    pub(crate) _placeholders: Placeholders,
}

/// Empty host placeholders for missing protected paths (so the box finds them read-only
/// instead of creating them); removed, if still empty and still ours, on drop.
#[derive(Default)]
pub struct Placeholders(pub Vec<airlock_native::Placeholder>);

impl Drop for Placeholders {
    fn drop(&mut self) {
        airlock_native::remove_placeholders(&self.0);
    }
}

fn unsupported(what: &'static str, why: String) -> BackendError {
    BackendError::Unsupported {
        kind: BackendKind::Microvm,
        what,
        why,
    }
}

impl MicrovmBox {
    fn monitor(&mut self, command: &str) -> Result<(), BackendError> {
        if let Some(end) = self.ended() {
            return Err(BackendError::Ended(end.reason));
        }
        self.vm
            .qmp
            .execute(command, json!({}))
            .map(|_| ())
            .map_err(|e| BackendError::Host(e.to_string()))
    }
}

impl BoxInstance for MicrovmBox {
    fn kind(&self) -> BackendKind {
        BackendKind::Microvm
    }

    fn receipt(&self) -> &Receipt {
        &self.receipt
    }

    fn command_defaults(&self) -> CommandDefaults {
        self.defaults.clone()
    }

    fn take_agent_stream(&mut self) -> Option<UnixStream> {
        self.agent.take()
    }

    fn ended(&self) -> Option<BoxEnd> {
        self.vm.exited().map(|reason| BoxEnd { reason })
    }

    fn usage(&mut self) -> Result<Usage, BackendError> {
        if let Some(end) = self.ended() {
            return Err(BackendError::Ended(end.reason));
        }
        Ok(crate::usage::sample(self.vm.pid))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            live_egress: self.proxy.is_some(),
            pause: true,
            checkpoint: (!self.holds_secrets).then_some(CheckpointKind::Memory),
            // An idle VM's QEMU wakes for the guest's timer ticks (under TCG here, about 0.6 %
            // of a core): small, and a stopped VM's clock would need setting at its claim.
            park: false,
        }
    }

    fn answer_approval(
        &mut self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        let Some(pending) = &self.approvals else {
            return Err(BackendError::Invalid("this box does not ask its owner about held connections (its approval policy is never, or an approver program answers)".into()));
        };
        OwnerAnswers(pending.clone()).answer(id, answer, by)
    }

    fn approval_answerer(&self) -> Option<std::sync::Arc<dyn ApprovalAnswerer>> {
        self.approvals
            .clone()
            .map(|p| std::sync::Arc::new(OwnerAnswers(p)) as std::sync::Arc<dyn ApprovalAnswerer>)
    }

    fn set_egress(&mut self, egress: &Egress) -> Result<(), BackendError> {
        let Some(proxy) = &self.proxy else {
            return Err(unsupported(
                "change its network policy",
                "the box was started without --net proxy, so it has no network device or door at all".into(),
            ));
        };
        let rules = crate::egress::rules(egress).map_err(BackendError::from)?;
        proxy.set_rules(rules);
        Ok(())
    }

    fn pause(&mut self) -> Result<(), BackendError> {
        self.monitor("stop")
    }

    fn resume(&mut self) -> Result<(), BackendError> {
        self.monitor("cont")?;
        // The guest's clock stood still while the VM was stopped.
        if let Some(port) = self.ctl.as_mut() {
            if let Err(e) = crate::control::set_clock(port) {
                eprintln!(
                    "airlock: the resumed microVM box keeps its clock from before the pause: {e}"
                );
            }
        }
        Ok(())
    }

    fn checkpoint(
        &mut self,
        dir: &std::path::Path,
        opts: &CheckpointOptions,
    ) -> Result<Checkpoint, BackendError> {
        if let Some(end) = self.ended() {
            return Err(BackendError::Ended(end.reason));
        }
        if self.holds_secrets {
            return Err(unsupported(
                "checkpoint",
                "its proxy holds secrets with a CA made for this box, which a restored box would not have; pause it in place (memory kept resident) instead".into(),
            ));
        }
        // QEMU refuses to save a VM with a 9p export attached: the guest detaches its shares
        // for the save (refused while a box process has a file open there) and attaches them
        // again after it; the checkpoint holds none of the host's files, only the VM's state
        // (its RAM holds the writable layer, /tmp and home, so every restore has its own copy).
        if self.has_shares {
            let port = self
                .ctl
                .as_mut()
                .ok_or_else(|| BackendError::Host("the box has no control port".into()))?;
            crate::control::send(port, airlock_microvm_guest::CTL_DETACH)
                .map_err(|e| unsupported("take a checkpoint", e.to_string()))?;
        }
        let path = crate::snapshot::in_checkpoint(dir);
        let saved = crate::snapshot::save(&mut self.vm, &path, opts.then_stop);
        if opts.then_stop && saved.is_ok() {
            self.vm.kill();
        } else if self.has_shares {
            if let Some(port) = self.ctl.as_mut() {
                crate::control::send(port, airlock_microvm_guest::CTL_ATTACH)
                    .map_err(BackendError::from)?;
            }
        }
        saved.map_err(BackendError::from)?;
        Ok(Checkpoint {
            kind: CheckpointKind::Memory,
            mechanism: "qemu-migration".into(),
        })
    }

    fn kill(self: Box<Self>) {
        drop(self);
    }
}

impl Drop for MicrovmBox {
    fn drop(&mut self) {
        // The VM first: nothing may still write through its shares when placeholders go.
        self.vm.kill();
        if let Some(p) = self.proxy.take() {
            p.stop();
        }
    }
}

/// The box's proxy's queue of held connections, answered in the owner's name (the proxy runs
/// in this process).
struct OwnerAnswers(std::sync::Arc<airlock_proxy::approval::PendingQueue>);

impl ApprovalAnswerer for OwnerAnswers {
    fn answer(
        &self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        use airlock_proxy::approval::ApprovalError;
        match airlock_proxy::approval::answer_from_owner(&self.0, id, answer.clone(), by) {
            Ok(()) => Ok(()),
            Err(e @ ApprovalError::NotPending { .. }) => {
                Err(BackendError::NotPending(e.to_string()))
            }
            Err(e) => Err(BackendError::Invalid(e.to_string())),
        }
    }
}
