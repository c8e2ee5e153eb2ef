//! The box's own egress proxy, on a host loopback port only the door connects to.

use crate::MicrovmError;
use airlock_policy::Egress;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{ProxyConfig, ProxyHandle};
use airlock_runtime::backend::StartOptions;
use std::time::Duration;

/// The allowlist as the proxy's rules.
pub fn rules(egress: &Egress) -> Result<EgressRules, MicrovmError> {
    EgressRules::from_egress(egress)
        .map_err(|e| MicrovmError::Invalid(format!("invalid network allowlist: {e}")))
}

/// Starts the proxy for a box with `egress`, reporting to `opts`' sink and audit file, and
/// holding the box's secrets through `intercept`. The
/// audit file is opened as every box kind opens it: never through a symlink in a directory a
/// box can write (`box_writable`), which a box could have planted to pick the file appended to.
pub fn start(
    egress: &Egress,
    opts: &StartOptions,
    box_writable: &[std::path::PathBuf],
    intercept: Option<std::sync::Arc<airlock_proxy::intercept::Interceptor>>,
) -> Result<ProxyHandle, MicrovmError> {
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
    let config = ProxyConfig {
        rules: rules(egress)?,
        max_connections: egress.max_connections as usize,
        byte_budget: egress.byte_budget,
        connect_timeout: Duration::from_secs(30),
        audit,
        on_event,
        intercept,
        // Only the approver program can answer for this box kind so far; `on-request` without
        // one is refused rather than run as `never`.
        approval: airlock_proxy::approval::gate_for(&egress.approval, None)
            .map_err(|e| MicrovmError::Invalid(e.to_string()))?,
        // The guest's sockets are the guest kernel's: the host cannot tell whose they are.
        peer_names: None,
    };
    airlock_proxy::server::start(listener, config)
        .map_err(|e| MicrovmError::io("cannot start the box's proxy", e))
}
