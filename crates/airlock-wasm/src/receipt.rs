//! What a WASM box is, said in its receipt before the layers of the native box it runs in.

use crate::engine::MemoryStyle;
use crate::python::PYTHON_NAME;
use crate::run_spec::{DirAccess, Preopen};
use airlock_policy::ResolvedPolicy;
use airlock_runtime::{LayerStatus, Receipt};

/// The WASM layers for `policy` with `dirs` preopened, then `confinement`'s layers.
pub fn receipt(
    policy: &ResolvedPolicy,
    dirs: &[Preopen],
    python: bool,
    style: MemoryStyle,
    confinement: Receipt,
) -> Receipt {
    let mut r = Receipt::default();
    r.add(
        "runtime",
        LayerStatus::Enforced,
        format!(
            "wasmtime {} (library), WASI preview 1 (wasi_snapshot_preview1)",
            crate::WASMTIME_VERSION
        ),
        format!(
            "each command is one WASI command module: python3 is {}{}, or a .wasm given by path; modules are compiled once and cached; a python3 run also gets CPython's standard library, unpacked from the pinned module, read-only (PYTHONHOME)",
            PYTHON_NAME,
            if python { "" } else { " (not installed on this host)" }
        ),
    );
    r.add(
        "processes",
        LayerStatus::Enforced,
        "none: WASI preview 1 has no process API",
        "code cannot start programs; shells and native programs are refused",
    );
    r.add(
        "threads",
        LayerStatus::Enforced,
        "none: wasmtime built without the threads proposal, no wasi-threads",
        "",
    );
    r.add(
        "sockets",
        LayerStatus::Enforced,
        "none: WASI preview 1 has no socket API and no socket is preopened",
        "--net proxy and --net host are refused",
    );
    let list: Vec<String> = dirs
        .iter()
        .map(|d| {
            let rights = match d.access {
                DirAccess::ReadOnly => "read-only",
                DirAccess::ReadWrite => "read-write",
            };
            format!("{} ({rights})", d.path)
        })
        .collect();
    r.add(
        "preopens",
        LayerStatus::Enforced,
        "WASI preopened directories (capability handles, no ambient paths)",
        format!(
            "{}; nothing else exists for the guest; protected paths stay read-only (mounts of the box)",
            list.join(", ")
        ),
    );
    r.add(
        "wasm-memory",
        if policy.limits.memory.is_some() {
            LayerStatus::Enforced
        } else {
            LayerStatus::Off
        },
        "wasmtime resource limiter on linear memory",
        format!(
            "{}; {}",
            match policy.limits.memory {
                Some(m) => format!(
                    "{m} bytes per run; a larger allocation fails cleanly (MemoryError in Python)"
                ),
                None => "no limit asked".into(),
            },
            match style {
                MemoryStyle::Reserved => "each linear memory is a 4 GiB reservation with guard pages (an access out of bounds faults)",
                MemoryStyle::Bounded => "each linear memory is a small reservation and every access is bounds-checked (the box caps memory by RLIMIT_AS, which a 4 GiB reservation would exceed)",
            }
        ),
    );
    r.add(
        "wasm-time",
        if policy.limits.timeout.is_some() {
            LayerStatus::Enforced
        } else {
            LayerStatus::Off
        },
        "epoch interruption (10 ms ticks)",
        match policy.limits.timeout {
            Some(t) => format!("a run is stopped after {} ms", t.as_millis()),
            None => "no timeout asked".into(),
        },
    );
    r.add(
        airlock_runtime::ROOT_LAYER,
        LayerStatus::Off,
        "none",
        "a WASI guest has no users: a root request (E2B's user=\"root\") runs like any other command",
    );
    r.add(
        "confinement",
        LayerStatus::Enforced,
        "wasmtime runs inside a native box (the layers below)",
        "if the WASM runtime is broken, the guest is still held by namespaces, seccomp, Landlock and no network",
    );
    r.layers.extend(confinement.layers);
    r
}
