//! What an `exec` request means in a WASM box. There are no processes for code to start: each
//! command is one run of a WASI module (`python3 …` is CPython for WASI, `/path/x.wasm …` is
//! that module), turned here into the in-box runner's command line. Anything else — a shell, a
//! native program — is refused with a sentence saying why and what works instead.

use crate::engine::MemoryStyle;
use crate::run_spec::{DirAccess, Preopen, RunSpec};
use airlock_protocol::ExecRequest;
use std::path::PathBuf;
use std::time::Duration;

/// Program names that mean CPython for WASI.
const PYTHON_NAMES: &[&str] = &["python3", "python", "python3.12"];
/// Shells: the runtime's code interpreter starts its driver through one (see [`driver_launch`]).
const SHELLS: &[&str] = &["sh", "bash", "dash"];
/// The interpreter driver the runtime writes into a box and starts (`airlock-runtime`'s
/// `interpreter.rs`): `sh -c "exec INTERPRETER DRIVER 3>&1 1>&2"`.
const DRIVER_DIR: &str = "/tmp/.airlock-interpreter/";
const PYTHON_DRIVER: &str = "python_driver.py";
/// How much longer than the runner's own time limit the agent waits before killing it, so
/// the runner stops the module and says why first.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// Why an exec cannot run in a WASM box (the sentence goes back to the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// Everything the mapping needs to know about the box.
#[derive(Debug, Clone)]
pub struct ExecMap {
    /// The airlock executable as the box sees it (it runs `wasm-run`).
    pub runner: String,
    /// CPython for WASI, compiled, as the box sees it.
    pub python: PathBuf,
    /// CPython's unpacked standard library as the box sees it (the guest's `PYTHONHOME`,
    /// preopened read-only); `None` leaves CPython on the zip inside its own module.
    pub python_home: Option<String>,
    /// The guest's preopened directories (the box's workspace, grants and /tmp).
    pub dirs: Vec<Preopen>,
    /// Linear memory cap of each run.
    pub memory: Option<u64>,
    /// Wall-clock cap of each run (the policy's timeout; a request's own is used if shorter).
    pub timeout: Option<Duration>,
    /// The linear-memory layout the box allows (`python` is compiled for it).
    pub memory_style: MemoryStyle,
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn no_processes(what: &str) -> Refusal {
    Refusal(format!(
        "a wasm box has no processes: {what} cannot run here; run `python3 …` (CPython for WASI) or a WASI command module by path (`/path/to/module.wasm …`), or use --backend native"
    ))
}

/// The interpreter and driver path of the runtime's driver launch, if `argv` is one.
pub fn driver_launch(argv: &[String]) -> Option<(&str, &str)> {
    let [shell, dash_c, script] = argv else {
        return None;
    };
    if !SHELLS.contains(&base_name(shell)) || dash_c != "-c" {
        return None;
    }
    let words: Vec<&str> = script.split_whitespace().collect();
    match words.as_slice() {
        ["exec", interpreter, driver, "3>&1", "1>&2"] if driver.starts_with(DRIVER_DIR) => {
            Some((interpreter, driver))
        }
        _ => None,
    }
}

impl ExecMap {
    /// The runner's exec for `req`, or why it cannot run.
    pub fn map(&self, req: &ExecRequest) -> Result<ExecRequest, Refusal> {
        let program = req.argv.first().map(String::as_str).unwrap_or_default();
        let mut python_run = true;
        let (module, argv) = if let Some((interpreter, driver)) = driver_launch(&req.argv) {
            if !PYTHON_NAMES.contains(&base_name(interpreter)) || base_name(driver) != PYTHON_DRIVER
            {
                return Err(Refusal(format!(
                    "a wasm box runs only Python code: there is no {} in it; use language python, or --backend native",
                    base_name(interpreter)
                )));
            }
            // The driver sees WASI's stdout as its event stream (see the driver's Channel).
            (self.python.clone(), vec!["python3".into(), driver.into()])
        } else if SHELLS.contains(&base_name(program)) {
            return Err(no_processes(&format!("a shell ({program})")));
        } else if PYTHON_NAMES.contains(&base_name(program)) {
            let mut argv = vec!["python3".to_string()];
            argv.extend(req.argv.iter().skip(1).cloned());
            (self.python.clone(), argv)
        } else if program.ends_with(".wasm") {
            if !program.starts_with('/') {
                return Err(Refusal(format!(
                    "{program}: give a WASI module by its absolute path inside the box (e.g. /workspace/{program})"
                )));
            }
            python_run = false;
            (PathBuf::from(program), req.argv.clone())
        } else {
            return Err(no_processes(&format!("`{program}` (not a WASI module)")));
        };
        let request_timeout = req.timeout_ms.map(Duration::from_millis);
        let timeout = match (self.timeout, request_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut env = req.env.clone();
        let mut dirs = self.dirs.clone();
        if let (true, Some(home)) = (python_run, &self.python_home) {
            // A PYTHONHOME of the caller's own is kept (it names a directory of theirs).
            env.entry("PYTHONHOME".into())
                .or_insert_with(|| home.clone());
            dirs.push(Preopen {
                path: home.clone(),
                access: DirAccess::ReadOnly,
            });
        }
        let spec = RunSpec {
            module,
            argv,
            env: env.into_iter().collect(),
            dirs,
            memory: self.memory,
            timeout,
            memory_style: self.memory_style,
        };
        let mut argv = vec![self.runner.clone(), "wasm-run".into()];
        argv.extend(spec.to_args());
        Ok(ExecRequest {
            argv,
            env: Default::default(),
            cwd: Some("/".into()),
            // On a terminal, the runner's stdio is the terminal (the guest has no terminal API,
            // but reads and writes it like any stream: `python3` alone is a REPL).
            tty: req.tty,
            stdin: req.stdin,
            timeout_ms: timeout.map(|t| (t + KILL_GRACE).as_millis() as u64),
            tag: req.tag.clone(),
            // A WASI guest has no users: a root request runs like any other (the receipt's
            // `root` line says so).
            user: airlock_protocol::ExecUser::User,
        })
    }
}

#[cfg(test)]
#[path = "exec_map_tests.rs"]
mod tests;
