//! Writing results to stdout without panicking when the reader has gone (`airlock sandbox ls |
//! head`): a closed pipe ends the output quietly.

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout and flushes it. A closed pipe is not an error.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
