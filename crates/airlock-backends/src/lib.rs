//! The one place that knows which backends this airlock is built with. The CLI, `airlock serve`
//! and `airlock mcp` all take their [`Backends`] from [`built_in`], so a new kind of box is added
//! here once and every entry point can start it.

use airlock_runtime::backend::Backends;
use std::path::PathBuf;
use std::sync::Arc;

/// What the built-in backends need to know about this host and this airlock.
#[derive(Debug, Clone)]
pub struct BackendConfig {
    /// airlock's own executable (native boxes run `airlock sandbox-host` from it).
    pub airlock_exe: PathBuf,
}

impl BackendConfig {
    pub fn new(airlock_exe: PathBuf) -> BackendConfig {
        BackendConfig { airlock_exe }
    }
}

/// Every backend built into this airlock (whether this host can run it is each one's `probe`).
pub fn built_in(config: &BackendConfig) -> Backends {
    Backends::new(vec![
        Arc::new(airlock_native::NativeBackend::new(
            config.airlock_exe.clone(),
        )),
        Arc::new(airlock_microvm::MicrovmBackend::beside(&config.airlock_exe)),
    ])
}
