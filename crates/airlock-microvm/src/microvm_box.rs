//! One running microVM box behind the seam. Dropping it (or `kill`) ends QEMU; nothing of the
//! box exists on the host besides the QEMU process and its descriptors, so nothing is left.

use crate::vm::Vm;
use airlock_policy::{BackendKind, Egress};
use airlock_proxy::server::ProxyHandle;
use airlock_runtime::backend::{
    BackendError, BoxEnd, BoxInstance, Capabilities, Checkpoint, CheckpointKind, CheckpointOptions,
    CommandDefaults, Usage,
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
    /// Why the box cannot be snapshotted, if it cannot (live host shares are mounted).
    pub(crate) no_snapshot: Option<String>,
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
            checkpoint: self.no_snapshot.is_none().then_some(CheckpointKind::Memory),
        }
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
        self.monitor("cont")
    }

    fn checkpoint(
        &mut self,
        dir: &std::path::Path,
        opts: &CheckpointOptions,
    ) -> Result<Checkpoint, BackendError> {
        if let Some(why) = &self.no_snapshot {
            return Err(unsupported("take a checkpoint", why.clone()));
        }
        let path = crate::snapshot::in_checkpoint(dir);
        crate::snapshot::save(&mut self.vm, &path, opts.then_stop).map_err(BackendError::from)?;
        if opts.then_stop {
            self.vm.kill();
        }
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
