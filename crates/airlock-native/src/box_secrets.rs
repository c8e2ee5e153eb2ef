//! A box's secrets: the proxy's interceptor (with the box's own CA), the box's trust bundle
//! (the host's plus that CA), and the receipt line saying what the proxy sees and what not.
//! Shared by every backend whose box reaches the same proxy.

use airlock_jail::rootfs::{FsOp, RootfsPlan};
use airlock_policy::ResolvedPolicy;
use airlock_proxy::intercept::{Interceptor, BOX_TRUST_BUNDLE};
use airlock_runtime::{LayerStatus, Receipt};
use std::sync::Arc;

/// Why a box's secrets cannot be held.
#[derive(Debug, thiserror::Error)]
pub enum SecretsSetupError {
    #[error("cannot hold the box's secrets: {0}")]
    Intercept(#[from] airlock_proxy::intercept::InterceptError),
    #[error("secrets need an isolated filesystem (the box's trust store is made for it); drop --profile full-access")]
    NoRoot,
}

/// The interceptor for `policy`'s secrets, or `None` when it has none.
pub fn interceptor(policy: &ResolvedPolicy) -> Result<Option<Arc<Interceptor>>, SecretsSetupError> {
    Ok(Interceptor::for_box(&policy.secrets)?)
}

/// Marks this process (the one whose proxy holds the values) not dumpable: no core dump of
/// its memory, no ptrace or /proc/PID/mem by processes of the same user. Called after the box
/// is spawned, so the box's own processes (which never hold a value) are unaffected.
pub fn protect_process() {
    // SAFETY: prctl with integer arguments; it only changes this process's dump flag.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Adds the box's CA to its trust bundle (the root's own, in a read-only bind or a template).
pub fn extend_trust(
    rootfs: Option<&mut RootfsPlan>,
    interceptor: &Interceptor,
) -> Result<(), SecretsSetupError> {
    let root = rootfs.ok_or(SecretsSetupError::NoRoot)?;
    root.ops.push(FsOp::ExtendFile {
        target: BOX_TRUST_BUNDLE.into(),
        append: interceptor.ca_pem().to_string(),
    });
    Ok(())
}

/// The receipt's `secrets` layer.
pub fn add_receipt(receipt: &mut Receipt, policy: &ResolvedPolicy) {
    add_receipt_for(receipt, &policy.secrets);
}

/// The receipt's `secrets` layer for these bindings (none: no layer).
pub fn add_receipt_for(receipt: &mut Receipt, secrets: &[airlock_policy::SecretBinding]) {
    if secrets.is_empty() {
        return;
    }
    let bound: Vec<String> = secrets
        .iter()
        .map(|s| format!("{} -> {}", s.name, s.hosts.join(" ")))
        .collect();
    receipt.add(
        "secrets",
        LayerStatus::Enforced,
        "held by the egress proxy; TLS to bound hosts terminated with a CA made for this box",
        format!(
            "{}; the box holds placeholders only, the proxy puts the values in requests to these hosts (headers; bodies where enabled) and verifies them against the host's trust store; a placeholder or value in a plain-HTTP request head or an intercepted request to another host is blocked; not seen: the payload of tunnels to other allowed hosts (encrypted, not intercepted) and of plain-HTTP bodies",
            bound.join(", ")
        ),
    );
}
