//! The in-box runner (`airlock wasm-run`): one WASI preview-1 command module inside wasmtime,
//! with only the preopened directories as files, no sockets, no processes, no threads, memory
//! capped by the store's resource limiter and wall time by epoch interruption. It runs as a
//! process of a box that is already confined (namespaces, seccomp, Landlock, no network), so a
//! bug in wasmtime still leaves the guest in a box.

use crate::engine::{self, EngineError};
use crate::run_spec::{DirAccess, RunSpec};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::{Engine, Linker, Module, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

/// How often the epoch advances: the resolution of the time limit and of an interrupt.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Exit status of a run stopped at its time limit (as `airlock run`'s own timeout).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status of a run ended by SIGINT (the code interpreter's interrupt).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status of a module that trapped (e.g. `unreachable`, out-of-bounds access).
pub const EXIT_TRAP: i32 = 134;
/// Exit status when the module does not exist (as a shell's "command not found").
pub const EXIT_NOT_FOUND: i32 = 127;
/// Exit status when the runner itself could not start the module.
pub const EXIT_FAILED: i32 = 125;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Why a run did not end with the module's own exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot preopen {path}: {why}")]
    Preopen { path: String, why: String },
    #[error("cannot instantiate the module: {0}")]
    Instantiate(String),
    #[error("the module has no `_start`: it is not a WASI command module (a reactor or library cannot be run)")]
    NoStart,
    #[error("--memory-style reserved needs 4 GiB of address space per linear memory, but this process's RLIMIT_AS is {limit} bytes; run it with --memory-style bounded (and a module compiled for it)")]
    AddressSpace { limit: u64 },
}

/// Refuses the reserved layout under an address-space rlimit, which would refuse the
/// reservation itself with a less telling error.
fn check_address_space(style: engine::MemoryStyle) -> Result<(), RunError> {
    if style != engine::MemoryStyle::Reserved {
        return Ok(());
    }
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; no other memory is touched.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) };
    if rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY {
        return Err(RunError::AddressSpace { limit: rl.rlim_cur });
    }
    Ok(())
}

/// Why the epoch callback stopped the guest.
#[derive(Debug, thiserror::Error)]
enum Stop {
    #[error("the run exceeded its time limit")]
    Timeout,
    #[error("the run was interrupted")]
    Interrupted,
}

struct State {
    wasi: WasiP1Ctx,
    limits: StoreLimits,
}

/// Runs `spec` to the end; the exit status (the module's, or one of the `EXIT_*` codes with a
/// sentence on stderr).
pub fn main(args: &[String]) -> i32 {
    let spec = match RunSpec::parse(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("airlock: {e}");
            return EXIT_FAILED;
        }
    };
    match run(&spec) {
        Ok(code) => code,
        Err(RunError::Engine(EngineError::Read { path, source }))
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            eprintln!("airlock: {}: no such WASI module", path.display());
            EXIT_NOT_FOUND
        }
        Err(e) => {
            eprintln!("airlock: {e}");
            EXIT_FAILED
        }
    }
}

fn load(engine: &Engine, spec: &RunSpec) -> Result<Module, RunError> {
    if spec.module.extension().is_some_and(|e| e == "cwasm") {
        return Ok(engine::load_compiled(engine, &spec.module)?);
    }
    let bytes = std::fs::read(&spec.module).map_err(|source| EngineError::Read {
        path: spec.module.clone(),
        source,
    })?;
    Module::new(engine, &bytes).map_err(|e| {
        RunError::Engine(EngineError::Compile {
            path: spec.module.clone(),
            why: format!("{e:#}"),
        })
    })
}

fn wasi_ctx(spec: &RunSpec) -> Result<WasiP1Ctx, RunError> {
    let mut b = WasiCtxBuilder::new();
    b.args(&spec.argv).envs(&spec.env).inherit_stdio();
    // File operations run on the guest's own thread: the default hands each one to a thread
    // pool, and CPython's start makes hundreds of them (a stat per import path entry).
    b.allow_blocking_current_thread(true);
    // No network: preview 1 has no socket API, and no socket is ever preopened. The builder's
    // preview-2 network defaults are turned off too, so nothing reaches `inherit_network`.
    b.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for d in &spec.dirs {
        let perms = match d.access {
            DirAccess::ReadOnly => FsPerms::ReadOnly,
            DirAccess::ReadWrite => FsPerms::ReadWrite,
        };
        b.preopened_dir(&d.path, &d.path, perms)
            .map_err(|e| RunError::Preopen {
                path: d.path.clone(),
                why: format!("{e:#}"),
            })?;
    }
    Ok(b.build_p1())
}

fn start_ticker(engine: &Engine) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let (engine, flag) = (engine.clone(), stop.clone());
    // A detached ticker: it ends with the process, or when the run is over.
    let _ = std::thread::Builder::new()
        .name("epoch".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        });
    stop
}

/// Times the phases of one run when `AIRLOCK_WASM_PHASES` is set in the runner's environment
/// (not the guest's): one `airlock: phase NAME MS` line each on stderr, for the start-time bench.
struct Phases {
    on: bool,
    last: Instant,
}

impl Phases {
    fn new() -> Phases {
        Phases {
            on: std::env::var_os("AIRLOCK_WASM_PHASES").is_some(),
            last: Instant::now(),
        }
    }

    fn done(&mut self, name: &str) {
        if self.on {
            let now = Instant::now();
            eprintln!(
                "airlock: phase {name} {:.2} ms",
                (now - self.last).as_secs_f64() * 1e3
            );
            self.last = now;
        }
    }
}

/// Runs the module of `spec`; its exit status.
pub fn run(spec: &RunSpec) -> Result<i32, RunError> {
    let mut phases = Phases::new();
    // SAFETY: installs a handler that only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    check_address_space(spec.memory_style)?;
    let engine = engine::engine(spec.memory_style)?;
    phases.done("engine");
    let module = load(&engine, spec)?;
    phases.done("load");
    let mut limits = StoreLimitsBuilder::new().trap_on_grow_failure(false);
    if let Some(m) = spec.memory {
        limits = limits.memory_size(usize::try_from(m).unwrap_or(usize::MAX));
    }
    let state = State {
        wasi: wasi_ctx(spec)?,
        limits: limits.build(),
    };
    phases.done("wasi-ctx");
    let mut store = Store::new(&engine, state);
    store.limiter(|s| &mut s.limits);
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(Stop::Interrupted.into());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Stop::Timeout.into());
        }
        Ok(UpdateDeadline::Continue(1))
    });
    let mut linker: Linker<State> = Linker::new(&engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| &mut s.wasi)
        .map_err(|e| RunError::Instantiate(format!("{e:#}")))?;
    let ticker = start_ticker(&engine);
    phases.done("linker");
    let instance = linker
        .instantiate(&mut store, &module)
        .map_err(|e| RunError::Instantiate(format!("{e:#}")))?;
    phases.done("instantiate");
    let start = instance
        .get_typed_func::<(), ()>(&mut store, "_start")
        .map_err(|_| RunError::NoStart)?;
    let outcome = start.call(&mut store, ());
    phases.done("guest");
    ticker.store(true, Ordering::Relaxed);
    Ok(match outcome {
        Ok(()) => 0,
        Err(e) => exit_status(&e, spec),
    })
}

fn exit_status(e: &wasmtime::Error, spec: &RunSpec) -> i32 {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return exit.0;
    }
    match e.downcast_ref::<Stop>() {
        Some(Stop::Timeout) => {
            let ms = spec.timeout.map(|t| t.as_millis()).unwrap_or_default();
            eprintln!("airlock: the module ran past its time limit ({ms} ms) and was stopped");
            EXIT_TIMEOUT
        }
        Some(Stop::Interrupted) => {
            eprintln!("airlock: the module was interrupted and stopped (its state is lost)");
            EXIT_INTERRUPTED
        }
        None => {
            let why = match e.downcast_ref::<wasmtime::Trap>() {
                Some(trap) => trap.to_string(),
                None => format!("{e:#}"),
            };
            eprintln!("airlock: the module trapped and was stopped: {why}");
            EXIT_TRAP
        }
    }
}
