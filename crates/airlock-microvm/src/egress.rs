//! The box's own egress proxy, on a host loopback port only the door connects to.

use crate::MicrovmError;
use airlock_policy::{ApprovalRequest, Egress as PolicyEgress};
use airlock_proxy::approval::{Approver, Asker, PendingQueue};
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{ProxyConfig, ProxyHandle};
use airlock_runtime::backend::ApprovalSink;
use airlock_runtime::backend::StartOptions;
use std::sync::Arc;
use std::time::Duration;

/// The allowlist as the proxy's rules.
pub fn rules(egress: &PolicyEgress) -> Result<EgressRules, MicrovmError> {
    EgressRules::from_egress(egress)
        .map_err(|e| MicrovmError::Invalid(format!("invalid network allowlist: {e}")))
}

/// Asks the box's owner (the server) about held connections through the sink it gave at start:
/// this process is the box's host, so the request is handed over directly, and the answer comes
/// back through [`MicrovmBox::answer_approval`](crate::MicrovmBox).
struct OwnerSink {
    sink: Arc<dyn ApprovalSink>,
}

impl Approver for OwnerSink {
    fn name(&self) -> String {
        "the owner (api)".into()
    }

    fn ask(&self, request: &ApprovalRequest) {
        self.sink.requested(request.clone());
    }

    fn withdrawn(&self, id: u64) {
        self.sink.withdrawn(id);
    }
}

/// The box's proxy, and the queue its owner answers held connections through (when it asks).
pub struct Egress {
    pub proxy: ProxyHandle,
    pub pending: Option<Arc<PendingQueue>>,
}

/// Starts the proxy for a box with `egress`, reporting to `opts`' sink and audit file, asking
/// `opts`' approvals sink about held connections, and
/// holding the box's secrets through `intercept`. The
/// audit file is opened as every box kind opens it: never through a symlink in a directory a
/// box can write (`box_writable`), which a box could have planted to pick the file appended to.
pub fn start(
    egress: &PolicyEgress,
    opts: &StartOptions,
    box_writable: &[std::path::PathBuf],
    intercept: Option<std::sync::Arc<airlock_proxy::intercept::Interceptor>>,
) -> Result<Egress, MicrovmError> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| MicrovmError::io("cannot listen for the box's proxy", e))?;
    let audit = match &opts.audit_file {
        Some(path) => Some(
            airlock_native::open_output(path, airlock_native::OutputMode::Append, box_writable)
                .map_err(|e| MicrovmError::Invalid(e.to_string()))?,
        ),
        None => None,
    };
    let on_event = opts.network_events.clone().map(|sink| {
        let f: airlock_proxy::audit::EventSink =
            std::sync::Arc::new(move |e| sink.network_event(airlock_native::network_event(e)));
        f
    });
    let pending = opts
        .approvals
        .as_ref()
        .filter(|_| egress.approval.approver.is_none())
        .map(|_| Arc::new(PendingQueue::new()));
    let asker = match (&opts.approvals, &pending) {
        (Some(sink), Some(pending)) => Some(Asker {
            approver: Arc::new(OwnerSink {
                sink: Arc::clone(sink),
            }),
            pending: Arc::clone(pending),
        }),
        _ => None,
    };
    let config = ProxyConfig {
        rules: rules(egress)?,
        max_connections: egress.max_connections as usize,
        byte_budget: egress.byte_budget,
        connect_timeout: Duration::from_secs(30),
        audit,
        on_event,
        intercept,
        // The approver program if the policy names one, else the owner (the server) when it
        // asks; `on-request` with neither is refused rather than run as `never`.
        approval: airlock_proxy::approval::gate_for(&egress.approval, asker)
            .map_err(|e| MicrovmError::Invalid(e.to_string()))?,
        // The guest's sockets are the guest kernel's: the host cannot tell whose they are.
        peer_names: None,
    };
    let proxy = airlock_proxy::server::start(listener, config)
        .map_err(|e| MicrovmError::io("cannot start the box's proxy", e))?;
    Ok(Egress { proxy, pending })
}
