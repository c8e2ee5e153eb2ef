//! The host's side of the init's control port: one word, one answer line.

use crate::MicrovmError;
use airlock_microvm_guest::CTL_OK;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long the init may take to detach or attach the shares.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);

/// Sends `word` and waits for `ok`; the init's sentence otherwise.
pub fn send(port: &mut UnixStream, word: &str) -> Result<(), MicrovmError> {
    port.write_all(format!("{word}\n").as_bytes())
        .map_err(|e| MicrovmError::io("cannot reach the guest's control port", e))?;
    port.set_read_timeout(Some(CONTROL_TIMEOUT))
        .map_err(|e| MicrovmError::io("cannot wait for the guest", e))?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match port.read(&mut byte) {
            Ok(0) => {
                return Err(MicrovmError::Boot(
                    "the guest closed its control port".into(),
                ))
            }
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() < 4096 => line.push(byte[0]),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(MicrovmError::io(
                    format!("the guest did not answer {word}"),
                    e,
                ))
            }
        }
    }
    let answer = String::from_utf8_lossy(&line);
    if answer.trim() == CTL_OK {
        return Ok(());
    }
    Err(MicrovmError::Guest(
        answer
            .trim()
            .strip_prefix("error: ")
            .unwrap_or(answer.trim())
            .to_string(),
    ))
}

/// Sets the guest's clock to the host's (after a restore or a resume: the VM kept the time it
/// was saved or stopped at).
pub fn set_clock(port: &mut UnixStream) -> Result<(), MicrovmError> {
    let ns = airlock_microvm_guest::wall_clock_ns();
    send(port, &format!("{} {ns}", airlock_microvm_guest::CTL_CLOCK))
}
