//! The one place that knows which backends this airlock is built with. The CLI, `airlock serve`
//! and `airlock mcp` all take their [`Backends`] from [`built_in`], so a new kind of box is added
//! here once and every entry point can start it.

use airlock_runtime::backend::Backends;
use std::path::PathBuf;
use std::sync::Arc;

/// The environment variable that carries `--runsc PATH` to every entry point.
pub const RUNSC_ENV: &str = "AIRLOCK_RUNSC";
/// The environment variable that carries `--gvisor-platform NAME`.
pub const GVISOR_PLATFORM_ENV: &str = "AIRLOCK_GVISOR_PLATFORM";

/// What the built-in backends need to know about this host and this airlock.
#[derive(Debug, Clone)]
pub struct BackendConfig {
    /// airlock's own executable (native boxes run `airlock sandbox-host` from it).
    pub airlock_exe: PathBuf,
    /// Which runsc and platform gVisor boxes use (`--runsc`, `--gvisor-platform`).
    pub gvisor: airlock_gvisor::GvisorConfig,
}

impl BackendConfig {
    /// The configuration for `airlock_exe`, with the gVisor choices from [`RUNSC_ENV`] and
    /// [`GVISOR_PLATFORM_ENV`] (an unknown platform name is reported when a box starts).
    pub fn new(airlock_exe: PathBuf) -> BackendConfig {
        BackendConfig {
            airlock_exe,
            gvisor: gvisor_from_env(),
        }
    }
}

/// The gVisor choices the environment carries.
pub fn gvisor_from_env() -> airlock_gvisor::GvisorConfig {
    airlock_gvisor::GvisorConfig {
        runsc: std::env::var_os(RUNSC_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        platform: std::env::var(GVISOR_PLATFORM_ENV)
            .ok()
            .and_then(|p| airlock_gvisor::Platform::parse(&p).ok()),
    }
}

/// Every backend built into this airlock (whether this host can run it is each one's `probe`).
pub fn built_in(config: &BackendConfig) -> Backends {
    let native = Arc::new(airlock_native::NativeBackend::new(
        config.airlock_exe.clone(),
    ));
    let wasm = airlock_wasm::WasmBackend::new(
        native.clone(),
        config.airlock_exe.clone(),
        airlock_wasm::WasmDir::locate(&config.airlock_exe),
    );
    Backends::new(vec![
        native,
        Arc::new(airlock_gvisor::GvisorBackend::new(
            config.airlock_exe.clone(),
            config.gvisor.clone(),
        )),
        Arc::new(wasm),
        Arc::new(airlock_microvm::MicrovmBackend::beside(&config.airlock_exe)),
    ])
}

/// `airlock wasm-run ARGS…`: one WASI run inside a WASM box (started by the wasm backend's
/// boxes, not by hand); its exit status.
pub fn wasm_run(args: &[String]) -> i32 {
    airlock_wasm::runner::main(args)
}

/// `airlock wasm-compile MODULE DIGEST CACHE STYLE`: compiles CPython for WASI into the wasm
/// backend's cache in a process of its own (started by the backend, not by hand).
pub fn wasm_compile(args: &[String]) -> i32 {
    airlock_wasm::python_files::compile_main(args)
}
