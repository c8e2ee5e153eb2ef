//! airlock's WASM box (`--backend wasm`): WASI preview-1 command modules — CPython for WASI
//! among them — run inside wasmtime, with the policy's workspace and grants as the only
//! preopened directories, no sockets, no processes and no threads; memory capped by wasmtime's
//! resource limiter, wall time by epoch interruption.
//!
//! The runtime is assumed breakable, so it never runs unconfined: every WASM box is a native
//! box (namespaces, seccomp, Landlock, no network) whose agent serves files as usual and whose
//! only programs are runs of [`runner`] (`airlock wasm-run`). The [`relay`] between the host
//! and that agent turns each exec into such a run ([`exec_map`]), or refuses it with a
//! sentence.

mod backend;
pub mod box_policy;
pub mod engine;
pub mod exec_map;
mod instance;
pub mod python;
pub mod python_files;
mod receipt;
pub mod relay;
pub mod run_spec;
pub mod runner;
pub mod scope;

pub use backend::WasmBackend;
pub use engine::WASMTIME_VERSION;
pub use python::WasmDir;
pub use run_spec::{DirAccess, Preopen, RunSpec};
