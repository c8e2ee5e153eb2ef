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
    raise_open_file_limit();
    let code = commands::main();
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// Raises this process's soft limit on open descriptors to its hard limit (at most 2^20). The
/// egress proxy holds two descriptors per tunnel, and the common default soft limit of 1024
/// would cap a box near 500 tunnels however high `--max-connections` is. Boxes get their own
/// limit (`open_files` in the policy), so they do not inherit this one.
fn raise_open_file_limit() {
    // SAFETY: rlimit is plain data for getrlimit to fill.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    let want = lim.rlim_max.min(1 << 20);
    if lim.rlim_cur < want {
        lim.rlim_cur = want;
        // SAFETY: a valid rlimit; raising the soft limit up to the hard one needs no privilege.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}
