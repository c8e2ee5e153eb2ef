//! One running WASM box: a native box whose agent is reached through the [`Relay`].

use crate::exec_map::ExecMap;
use crate::relay::Relay;
use crate::scope::Scope;
use airlock_policy::{BackendKind, Egress, ResolvedPolicy};
use airlock_runtime::backend::{
    BackendError, BoxEnd, BoxInstance, Capabilities, CommandDefaults, Template, Usage,
};
use airlock_runtime::Receipt;
use std::os::unix::net::UnixStream;

/// The environment commands of a box start with: the template's, then the policy's.
pub(crate) fn command_env(
    policy: &ResolvedPolicy,
    template: &Template,
) -> std::collections::BTreeMap<String, String> {
    let mut env = match template {
        Template::Image(t) => t.defaults.env.clone(),
        Template::Host => Default::default(),
    };
    env.extend(policy.env.iter().cloned());
    env
}

/// A WASM box. Dropping it ends the relay, then the native box under it.
pub struct WasmInstance {
    relay: Option<Relay>,
    host_end: Option<UnixStream>,
    receipt: Receipt,
    defaults: CommandDefaults,
    // Declared last: dropped after the relay.
    inner: Option<Box<dyn BoxInstance>>,
}

impl WasmInstance {
    pub(crate) fn start(
        mut inner: Box<dyn BoxInstance>,
        receipt: Receipt,
        policy: &ResolvedPolicy,
        template: &Template,
        map: ExecMap,
        scope: Scope,
    ) -> Result<WasmInstance, BackendError> {
        let Some(agent) = inner.take_agent_stream() else {
            inner.kill();
            return Err(BackendError::Start(
                "the confining box gave no agent connection".into(),
            ));
        };
        let pair = UnixStream::pair().and_then(|(ours, relay_end)| {
            Relay::start(relay_end, agent, map, scope).map(|relay| (ours, relay))
        });
        let (host_end, relay) = match pair {
            Ok(p) => p,
            Err(e) => {
                inner.kill();
                return Err(BackendError::Start(format!(
                    "cannot start the wasm box's relay: {e}"
                )));
            }
        };
        let env = command_env(policy, template);
        Ok(WasmInstance {
            relay: Some(relay),
            host_end: Some(host_end),
            receipt,
            defaults: CommandDefaults {
                env,
                cwd: policy.cwd.to_string_lossy().into_owned(),
            },
            inner: Some(inner),
        })
    }

    fn inner(&self) -> Result<&dyn BoxInstance, BackendError> {
        self.inner
            .as_deref()
            .ok_or_else(|| BackendError::Ended("the wasm box was killed".into()))
    }
}

impl BoxInstance for WasmInstance {
    fn kind(&self) -> BackendKind {
        BackendKind::Wasm
    }

    fn receipt(&self) -> &Receipt {
        &self.receipt
    }

    fn command_defaults(&self) -> CommandDefaults {
        self.defaults.clone()
    }

    fn take_agent_stream(&mut self) -> Option<UnixStream> {
        self.host_end.take()
    }

    fn ended(&self) -> Option<BoxEnd> {
        match self.inner() {
            Ok(inner) => inner.ended(),
            Err(e) => Some(BoxEnd {
                reason: e.to_string(),
            }),
        }
    }

    fn usage(&mut self) -> Result<Usage, BackendError> {
        match self.inner.as_mut() {
            Some(inner) => inner.usage(),
            None => Err(BackendError::Ended("the wasm box was killed".into())),
        }
    }

    fn capabilities(&self) -> Capabilities {
        let inner = self.inner().map(|i| i.capabilities()).unwrap_or_default();
        Capabilities {
            live_egress: false,
            ..inner
        }
    }

    fn set_egress(&mut self, _: &Egress) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            kind: BackendKind::Wasm,
            what: "change its network policy",
            why: "it has no network (WASI preview 1 has no sockets)".into(),
        })
    }

    fn pause(&mut self) -> Result<(), BackendError> {
        match self.inner.as_mut() {
            Some(inner) => inner.pause(),
            None => Err(BackendError::Ended("the wasm box was killed".into())),
        }
    }

    fn resume(&mut self) -> Result<(), BackendError> {
        match self.inner.as_mut() {
            Some(inner) => inner.resume(),
            None => Err(BackendError::Ended("the wasm box was killed".into())),
        }
    }

    fn kill(mut self: Box<Self>) {
        self.relay = None;
        if let Some(inner) = self.inner.take() {
            inner.kill();
        }
    }
}
