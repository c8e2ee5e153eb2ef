//! The `airlock` command line.

mod cli;
mod client;
mod commands;
mod mcp;
mod secret_flags;
mod templates;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The WASM box's runner, before anything else: it starts once per command in a box and
    // takes its arguments verbatim (they are written by the wasm backend, never by hand).
    // Its compiler likewise, in a process of its own (cranelift leaves threads behind).
    let first = std::env::args_os().nth(1);
    let hidden: Option<fn(&[String]) -> i32> = match first.as_deref().and_then(|a| a.to_str()) {
        Some("wasm-run") => Some(airlock_backends::wasm_run),
        Some("wasm-compile") => Some(airlock_backends::wasm_compile),
        _ => None,
    };
    if let Some(entry) = hidden {
        let args: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let code = entry(&args);
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    airlock_jail::rlimits::raise_open_file_limit();
    let code = commands::main();
    ExitCode::from(code.clamp(0, 255) as u8)
}
