//! `airlock run` for a backend other than native: start a box through the seam, run the one
//! command over its agent (stdin read up front unless it is a terminal or --no-stdin, output
//! relayed as it comes, capped), end the box. A stopgap until the runtime offers a generic
//! attached run; the native backend keeps its own supervisor.

use airlock_policy::ResolvedPolicy;
use airlock_runtime::backend::{StartOptions, Template};
use airlock_runtime::{Command, LiveSandbox, Stream};
use anyhow::Result;
use std::io::{IsTerminal, Read, Write};

/// Exit status when airlock itself fails (as the native run's).
const FAILED: i32 = 125;
/// Exit status of a run stopped at its timeout.
const TIMED_OUT: i32 = 124;

/// Runs `argv` in a new box of `policy.backend`; the command's exit status.
pub(crate) fn run(policy: &ResolvedPolicy, argv: &[String], no_stdin: bool) -> Result<i32> {
    let backend = crate::commands::backends()?.select(policy.backend)?;
    let stdin = if no_stdin || std::io::stdin().is_terminal() {
        None
    } else {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Some(buf)
    };
    let mut sandbox =
        match LiveSandbox::start(&*backend, policy, &Template::Host, &StartOptions::default()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("airlock: {e}");
                return Ok(FAILED);
            }
        };
    let cmd = Command {
        argv: argv.to_vec(),
        env: Default::default(),
        cwd: None,
        stdin,
        timeout: policy.limits.timeout,
    };
    let mut left = policy.limits.output.unwrap_or(u64::MAX);
    let mut capped = false;
    let outcome = sandbox.channel().exec_stream(
        &cmd,
        |_| {},
        |which, data| {
            let n = data.len() as u64;
            let keep = data.get(..left.min(n) as usize).unwrap_or(data);
            let _ = match which {
                Stream::Stdout => std::io::stdout().write_all(keep),
                Stream::Stderr => std::io::stderr().write_all(keep),
            };
            left = left.saturating_sub(n);
            if left == 0 && n > keep.len() as u64 {
                capped = true;
                return false;
            }
            true
        },
    );
    let _ = std::io::stdout().flush();
    sandbox.kill();
    let exit = match outcome {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("airlock: {e}");
            return Ok(FAILED);
        }
    };
    if capped {
        eprintln!("airlock: limit reached: output");
    }
    Ok(if exit.timed_out {
        eprintln!("airlock: limit reached: timeout");
        TIMED_OUT
    } else if let Some(sig) = exit.signal {
        128 + sig
    } else {
        exit.exit_code.unwrap_or(FAILED)
    })
}
