//! The one wasmtime configuration every box uses, and the compiled-module cache.
//!
//! A module is compiled on the host (outside any box) once and serialized under a cache
//! directory, keyed by the module's SHA-256 and the engine's compatibility hash (wasmtime's
//! version and every setting that changes the compiled code). Boxes only deserialize: a start
//! costs no compilation.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::{Config, Engine, Module};

/// The wasmtime crate version this airlock is built with (named in receipts and cache keys).
pub const WASMTIME_VERSION: &str = "48";

/// Errors of the engine and the compiled-module cache.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot configure wasmtime: {0}")]
    Config(String),
    #[error("cannot read the module {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a WebAssembly module wasmtime can compile: {why}")]
    Compile { path: PathBuf, why: String },
    #[error("cannot write the compiled module to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the compiled module {path} cannot be loaded ({why}); delete it and it is rebuilt on the next start")]
    Load { path: PathBuf, why: String },
}

/// How a guest's linear memory is laid out, which decides how its loads and stores are
/// checked. The compiled code differs, so each style has its own compiled file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryStyle {
    /// wasmtime's default: 4 GiB of address space reserved per linear memory, with guard
    /// pages after it, so an access out of bounds faults and compiled code checks nothing.
    /// Only virtual memory: it needs a box whose memory is capped by a cgroup, not by
    /// `RLIMIT_AS`, which would refuse the reservation.
    Reserved,
    /// A 16 MiB reservation that moves as the memory grows, with an explicit bounds check on
    /// every load and store (about a third slower for CPython's start, see BENCHMARKS.md).
    /// Fits under any address-space rlimit.
    Bounded,
}

impl MemoryStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStyle::Reserved => "reserved",
            MemoryStyle::Bounded => "bounded",
        }
    }

    pub fn parse(s: &str) -> Option<MemoryStyle> {
        match s {
            "reserved" => Some(MemoryStyle::Reserved),
            "bounded" => Some(MemoryStyle::Bounded),
            _ => None,
        }
    }
}

/// The engine: epoch interruption on (the wall-clock limit), no threads (wasmtime is built
/// without the threads proposal), and linear memory laid out as `style` says.
pub fn engine(style: MemoryStyle) -> Result<Engine, EngineError> {
    let mut c = Config::new();
    c.epoch_interruption(true);
    if style == MemoryStyle::Bounded {
        c.memory_reservation(16 << 20)
            .memory_guard_size(64 << 10)
            .memory_reservation_for_growth(16 << 20);
    }
    Engine::new(&c).map_err(|e| EngineError::Config(e.to_string()))
}

/// The SHA-256 of a module's bytes, hex.
pub fn module_digest(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(bytes);
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A short hash of everything in `engine` that the compiled code depends on.
fn engine_key(engine: &Engine) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Where the compiled form of a module with `digest` lives under `cache_dir`.
pub fn compiled_path(engine: &Engine, cache_dir: &Path, digest: &str) -> PathBuf {
    cache_dir.join(format!(
        "{digest}-wasmtime{WASMTIME_VERSION}-{}.cwasm",
        engine_key(engine)
    ))
}

/// The compiled form of `module` under `cache_dir`, compiling and storing it first if it is
/// not there. Returns its path. The file is written to a temporary name and renamed, so a
/// concurrent start never sees half of it.
pub fn ensure_compiled(
    engine: &Engine,
    module: &Path,
    digest: &str,
    cache_dir: &Path,
) -> Result<PathBuf, EngineError> {
    let out = compiled_path(engine, cache_dir, digest);
    if out.is_file() {
        return Ok(out);
    }
    let bytes = std::fs::read(module).map_err(|source| EngineError::Read {
        path: module.to_path_buf(),
        source,
    })?;
    let compiled = engine
        .precompile_module(&bytes)
        .map_err(|e| EngineError::Compile {
            path: module.to_path_buf(),
            why: format!("{e:#}"),
        })?;
    let write_err = |source| EngineError::Write {
        path: out.clone(),
        source,
    };
    std::fs::create_dir_all(cache_dir).map_err(write_err)?;
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &compiled).map_err(write_err)?;
    std::fs::rename(&tmp, &out).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_err(e)
    })?;
    Ok(out)
}

/// Loads a compiled module made by [`ensure_compiled`].
pub fn load_compiled(engine: &Engine, path: &Path) -> Result<Module, EngineError> {
    // SAFETY: deserializing trusts the file to be wasmtime's own output. It is: only
    // `ensure_compiled` writes this cache, on the host, into a directory every box sees
    // read-only (the backend grants it read-only, and its name carries the module's digest and
    // the engine's compatibility hash, which wasmtime checks again in the file's header).
    unsafe { Module::deserialize_file(engine, path) }.map_err(|e| EngineError::Load {
        path: path.to_path_buf(),
        why: format!("{e:#}"),
    })
}
