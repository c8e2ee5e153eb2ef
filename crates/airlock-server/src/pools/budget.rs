//! What a ready box is charged against `--pool-memory`: what a box of its kind holds while it
//! waits for a claim (it runs nothing but its init), never more than its memory limit. The
//! figures are upper bounds, kept as data with the reason for each.

use airlock_policy::{BackendKind, ResolvedPolicy};

const MIB: u64 = 1 << 20;

/// The default `--pool-memory`.
pub const DEFAULT_BUDGET: u64 = 1 << 30;

/// Host memory one ready box of `policy` is counted as.
pub fn charge(policy: &ResolvedPolicy) -> u64 {
    let idle = match policy.backend {
        // The box's host process, its agent (init) and the kernel's share (namespaces, the
        // tmpfs root): 2.5 MiB per idle box measured (BENCHMARKS.md, density), counted as 8.
        BackendKind::Native | BackendKind::Wasm => 8 * MIB,
        // runsc's sandbox (the Sentry) and gofer beside the host process.
        BackendKind::Gvisor => 64 * MIB,
        // QEMU may hand the guest all of its memory: the guest's size is what it can hold.
        BackendKind::Microvm => u64::MAX,
    };
    policy.limits.memory.map_or(idle, |limit| idle.min(limit))
}

/// `bytes` as people read it (`512 MiB`, `1.5 GiB`).
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes.div_ceil(MIB))
    }
}
