//! CPython for WASI made ready to start fast, once per host: the module compiled into the
//! cache, its standard library unpacked beside it, and a stamp that lets later starts skip
//! hashing the 26 MB module.
//!
//! The pinned module carries its standard library as a zip inside its own virtual file system;
//! importing from it makes CPython parse the zip's directory and inflate every module in
//! Python, on every start. Unpacked once into a directory the guest gets read-only (with
//! `PYTHONHOME` naming it), the same files import straight from `.pyc` (see BENCHMARKS.md).

use crate::engine::{self, EngineError, MemoryStyle};
use crate::python::{WasmDir, PYTHON_SHA256};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the pinned CPython keeps its standard library inside its own file system.
const EMBEDDED_STDLIB: &str = "/usr/local/lib/python312.zip";
/// The standard library's directory under `PYTHONHOME`.
pub const STDLIB_SUBDIR: &str = "lib/python3.12";

/// CPython for WASI on the host, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonFiles {
    /// The compiled module.
    pub compiled: PathBuf,
    /// The unpacked standard library: the guest's `PYTHONHOME`.
    pub home: PathBuf,
}

/// Why CPython for WASI is not ready.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error("CPython for WASI is not installed ({path}: {source}); install it with `{install}`")]
    Missing {
        path: PathBuf,
        source: std::io::Error,
        install: String,
    },
    #[error("{path} is not the pinned CPython for WASI (sha256 {digest}, expected {PYTHON_SHA256}); reinstall it with `{install}`")]
    Digest {
        path: PathBuf,
        digest: String,
        install: String,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot unpack CPython's standard library into {path}: {why}")]
    Unpack { path: PathBuf, why: String },
}

/// What the stamp records of the module file: size, modification time and inode. A file
/// replaced or rewritten (a reinstall) changes them, and is hashed again.
fn identity(meta: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {}\n",
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino()
    )
}

/// Checks the installed module against its pinned digest, hashing it only when the stamp in
/// the cache does not name this very file.
fn check_digest(dir: &WasmDir, stamp: &Path) -> Result<(), PythonError> {
    let module = dir.python();
    let missing = |source| PythonError::Missing {
        path: module.clone(),
        source,
        install: dir.install_command(),
    };
    let meta = std::fs::metadata(&module).map_err(missing)?;
    let id = identity(&meta);
    if std::fs::read_to_string(stamp).is_ok_and(|s| s == id) {
        return Ok(());
    }
    let bytes = std::fs::read(&module).map_err(missing)?;
    let digest = engine::module_digest(&bytes);
    if digest != PYTHON_SHA256 {
        return Err(PythonError::Digest {
            path: module,
            digest,
            install: dir.install_command(),
        });
    }
    // Best effort: without a stamp the next start hashes again.
    if let Some(parent) = stamp.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(stamp, id);
    Ok(())
}

/// Unpacks the module's embedded standard library into `home` by running the pinned CPython
/// itself (`airlock wasm-run`, its only directory the new one), so no zip code of our own
/// reads it. Written to a temporary name and renamed: a concurrent start sees all or nothing.
fn unpack_stdlib(
    airlock_exe: &Path,
    compiled: &Path,
    style: MemoryStyle,
    home: &Path,
) -> Result<(), PythonError> {
    let fail = |why: String| PythonError::Unpack {
        path: home.to_path_buf(),
        why,
    };
    let tmp = home.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| fail(e.to_string()))?;
    let tmp_str = tmp.to_string_lossy().into_owned();
    let script = format!(
        "import zipfile; zipfile.ZipFile({EMBEDDED_STDLIB:?}).extractall({:?})",
        format!("{tmp_str}/{STDLIB_SUBDIR}")
    );
    let out = Command::new(airlock_exe)
        .arg("wasm-run")
        .args(["--module", &compiled.to_string_lossy()])
        .args(["--memory-style", style.as_str()])
        .args(["--dir", &format!("rw:{tmp_str}")])
        .args([
            "--timeout-ms",
            "300000",
            "--",
            "python3",
            "-I",
            "-c",
            &script,
        ])
        .env_clear()
        .output();
    let result = match out {
        Ok(o) if o.status.success() => std::fs::rename(&tmp, home).map_err(|e| fail(e.to_string())),
        Ok(o) => Err(fail(format!(
            "the unpacking run ended with {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ))),
        Err(e) => Err(fail(format!("cannot run {}: {e}", airlock_exe.display()))),
    };
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    // Another start may have renamed its copy first: that one is as good.
    if home.join(STDLIB_SUBDIR).is_dir() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Ok(());
    }
    result
}

/// Compiles the module into the cache in a child process (`airlock wasm-compile`). Cranelift
/// compiles on a pool of threads that outlive the compile, and the process that asked may be
/// about to start a native box, which must be single-threaded when it clones.
fn compile_in_child(
    airlock_exe: &Path,
    module: &Path,
    cache: &Path,
    compiled: &Path,
    style: MemoryStyle,
) -> Result<(), PythonError> {
    let fail = |why: String| {
        PythonError::Engine(EngineError::Compile {
            path: module.to_path_buf(),
            why,
        })
    };
    let out = Command::new(airlock_exe)
        .arg("wasm-compile")
        .arg(module)
        .arg(PYTHON_SHA256)
        .arg(cache)
        .arg(style.as_str())
        .env_clear()
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", airlock_exe.display())))?;
    if !out.status.success() {
        return Err(fail(format!(
            "`airlock wasm-compile` ended with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    if !compiled.is_file() {
        return Err(fail(format!(
            "`airlock wasm-compile` succeeded but {} is not there (another wasmtime version?)",
            compiled.display()
        )));
    }
    Ok(())
}

/// `airlock wasm-compile MODULE DIGEST CACHE STYLE`: compiles MODULE (whose SHA-256 is DIGEST)
/// into CACHE with the boxes' engine for memory style STYLE (nothing to do if it is there),
/// prints the compiled file's path, and exits. Run by [`prepare`] (and by the test and bench
/// scripts, to have both styles ready).
pub fn compile_main(args: &[String]) -> i32 {
    let usage = "airlock: usage: airlock wasm-compile MODULE DIGEST CACHE reserved|bounded";
    let [module, digest, cache, style] = args else {
        eprintln!("{usage}");
        return 2;
    };
    let Some(style) = MemoryStyle::parse(style) else {
        eprintln!("{usage}");
        return 2;
    };
    let result = engine::engine(style).and_then(|engine| {
        engine::ensure_compiled(&engine, Path::new(module), digest, Path::new(cache))
    });
    match result {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(e) => {
            eprintln!("airlock: {e}");
            1
        }
    }
}

/// CPython for WASI in `dir`, checked against its pinned digest, compiled for memory style
/// `style` and its standard library unpacked into the cache the first time (a minute or so,
/// once per wasmtime version and style).
pub fn prepare(
    dir: &WasmDir,
    airlock_exe: &Path,
    style: MemoryStyle,
) -> Result<PythonFiles, PythonError> {
    let cache = dir.cache();
    let stamp = cache.join(format!("{PYTHON_SHA256}.checked"));
    check_digest(dir, &stamp)?;
    let engine = engine::engine(style)?;
    let compiled = engine::compiled_path(&engine, &cache, PYTHON_SHA256);
    if !compiled.is_file() {
        compile_in_child(airlock_exe, &dir.python(), &cache, &compiled, style)?;
    }
    let home = cache.join(format!("{PYTHON_SHA256}-home"));
    if !home.join(STDLIB_SUBDIR).is_dir() {
        unpack_stdlib(airlock_exe, &compiled, style, &home)?;
    }
    Ok(PythonFiles { compiled, home })
}
