//! The `airlock` command line.

mod cli;
mod client;
mod commands;
mod mcp;

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = commands::main();
    ExitCode::from(code.clamp(0, 255) as u8)
}
