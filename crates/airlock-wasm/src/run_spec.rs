//! What one WASI run is: the module, its argv and environment, its preopened directories and
//! their rights, and its limits. Passed from the backend to the in-box runner as arguments
//! (`airlock wasm-run …`), so this module is the one place that writes and parses them.

use crate::engine::MemoryStyle;
use std::path::PathBuf;
use std::time::Duration;

/// The rights a preopened directory grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    ReadOnly,
    ReadWrite,
}

impl DirAccess {
    fn as_str(self) -> &'static str {
        match self {
            DirAccess::ReadOnly => "ro",
            DirAccess::ReadWrite => "rw",
        }
    }
}

/// One preopened directory: the same path for the guest as in the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preopen {
    pub path: String,
    pub access: DirAccess,
}

/// One run of a WASI command module inside a box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// The compiled module (`.cwasm`, loaded without compiling) or a `.wasm` (compiled now).
    pub module: PathBuf,
    /// argv, `argv[0]` included.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub dirs: Vec<Preopen>,
    /// Most bytes of linear memory (all memories together); growth past it fails cleanly.
    pub memory: Option<u64>,
    /// Wall-clock limit of the whole run.
    pub timeout: Option<Duration>,
    /// How linear memory is laid out; a `.cwasm` must have been compiled for the same style.
    pub memory_style: MemoryStyle,
}

/// Why the runner's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wasm-run: {0} (this command is started by the wasm backend, not by hand)")]
pub struct SpecError(String);

impl RunSpec {
    /// The runner's arguments for this spec (after `airlock wasm-run`).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--module".to_string(),
            self.module.to_string_lossy().into_owned(),
            "--memory-style".to_string(),
            self.memory_style.as_str().to_string(),
        ];
        for d in &self.dirs {
            a.push("--dir".into());
            a.push(format!("{}:{}", d.access.as_str(), d.path));
        }
        for (k, v) in &self.env {
            a.push("--env".into());
            a.push(format!("{k}={v}"));
        }
        for (flag, value) in [
            ("--memory", self.memory),
            ("--timeout-ms", self.timeout.map(|t| t.as_millis() as u64)),
        ] {
            if let Some(v) = value {
                a.push(flag.into());
                a.push(v.to_string());
            }
        }
        a.push("--".into());
        a.extend(self.argv.iter().cloned());
        a
    }

    /// Parses what [`RunSpec::to_args`] wrote.
    pub fn parse(args: &[String]) -> Result<RunSpec, SpecError> {
        let err = |m: String| SpecError(m);
        let mut spec = RunSpec {
            module: PathBuf::new(),
            argv: Vec::new(),
            env: Vec::new(),
            dirs: Vec::new(),
            memory: None,
            timeout: None,
            memory_style: MemoryStyle::Bounded,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if flag == "--" {
                spec.argv = it.cloned().collect();
                break;
            }
            let value = it
                .next()
                .ok_or_else(|| err(format!("{flag} needs a value")))?;
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| err(format!("{flag} {v:?} is not a number")))
            };
            match flag.as_str() {
                "--module" => spec.module = PathBuf::from(value),
                "--dir" => {
                    let (access, path) = match value.split_once(':') {
                        Some(("ro", p)) => (DirAccess::ReadOnly, p),
                        Some(("rw", p)) => (DirAccess::ReadWrite, p),
                        _ => return Err(err(format!("--dir {value:?} is not ro:PATH or rw:PATH"))),
                    };
                    spec.dirs.push(Preopen {
                        path: path.to_string(),
                        access,
                    });
                }
                "--env" => {
                    let (k, v) = value
                        .split_once('=')
                        .ok_or_else(|| err(format!("--env {value:?} is not NAME=VALUE")))?;
                    spec.env.push((k.to_string(), v.to_string()));
                }
                "--memory" => spec.memory = Some(number(value)?),
                "--memory-style" => {
                    spec.memory_style = MemoryStyle::parse(value).ok_or_else(|| {
                        err(format!(
                            "--memory-style {value:?} is not \"reserved\" or \"bounded\""
                        ))
                    })?
                }
                "--timeout-ms" => spec.timeout = Some(Duration::from_millis(number(value)?)),
                other => return Err(err(format!("unknown flag {other:?}"))),
            }
        }
        if spec.module.as_os_str().is_empty() {
            return Err(err("--module is missing".into()));
        }
        if spec.argv.is_empty() {
            return Err(err("no argv after --".into()));
        }
        Ok(spec)
    }
}

#[cfg(test)]
#[path = "run_spec_tests.rs"]
mod tests;
