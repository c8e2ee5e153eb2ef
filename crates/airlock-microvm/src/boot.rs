//! Bringing a VM up to a greeted agent: start (or restore) QEMU, hand the guest its config
//! line, wait for `ready`, exchange the agent's hello.

use crate::vm::{Vm, VmSpec};
use crate::MicrovmError;
use airlock_microvm_guest::{GuestConfig, INIT_READY};
use airlock_runtime::AgentClient;
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long a guest may take from QEMU's start to the init's `ready` (TCG on a busy host is
/// slow; a KVM guest takes a fraction of this).
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the agent may take to greet.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long loading a snapshot may take.
const RESTORE_TIMEOUT: Duration = Duration::from_secs(60);

/// A VM whose init waits for its config (booted cold, or restored from a template snapshot).
pub fn start_vm(spec: &VmSpec, snapshot: Option<std::fs::File>) -> Result<Vm, MicrovmError> {
    let restoring = snapshot.is_some();
    let t = std::time::Instant::now();
    let mut vm = Vm::spawn(spec, snapshot)?;
    trace("QEMU up (monitor greeted)", t);
    if restoring {
        let loaded = vm
            .qmp
            .wait_migration(RESTORE_TIMEOUT)
            .and_then(|()| vm.qmp.execute("cont", json!({})).map(|_| ()));
        if let Err(e) = loaded {
            return Err(MicrovmError::Boot(format!(
                "the snapshot did not load ({e}): {}",
                vm.console_tail()
            )));
        }
        trace("snapshot loaded and running", t);
    }
    Ok(vm)
}

/// With `AIRLOCK_MICROVM_TRACE` set, prints how long a start phase took (for benchmarks).
pub fn trace(what: &str, since: std::time::Instant) {
    if std::env::var_os("AIRLOCK_MICROVM_TRACE").is_some() {
        eprintln!(
            "airlock microvm: {what}: {} ms",
            since.elapsed().as_millis()
        );
    }
}

/// Sends the config, waits for the box, and greets the agent; the agent's stream.
pub fn configure(
    vm: &mut Vm,
    cfg: &GuestConfig,
    timeout: Duration,
) -> Result<UnixStream, MicrovmError> {
    let mut stream = vm
        .agent
        .take()
        .ok_or_else(|| MicrovmError::Boot("the agent's port was already taken".into()))?;
    // The guest's clock is the snapshot's until the init sets it to the host's, now.
    let cfg = GuestConfig {
        wall_clock_ns: Some(airlock_microvm_guest::wall_clock_ns()),
        ..cfg.clone()
    };
    let mut line = serde_json::to_vec(&cfg).map_err(|e| MicrovmError::Invalid(e.to_string()))?;
    line.push(b'\n');
    stream
        .write_all(&line)
        .map_err(|e| MicrovmError::io("cannot send the box's config to the guest", e))?;
    let t = std::time::Instant::now();
    let answer = read_line(&mut stream, timeout).map_err(|e| {
        MicrovmError::Boot(format!(
            "{e}; the guest's console said: {}",
            vm.console_tail()
        ))
    })?;
    if answer != INIT_READY {
        let said = answer.strip_prefix("error: ").unwrap_or(&answer);
        return Err(MicrovmError::Guest(said.to_string()));
    }
    trace("guest built the box", t);
    let client = AgentClient::connect(stream, HELLO_TIMEOUT).map_err(|e| {
        MicrovmError::Boot(format!(
            "the guest's agent did not greet: {e}; console: {}",
            vm.console_tail()
        ))
    })?;
    trace("agent greeted", t);
    client
        .into_stream()
        .ok_or_else(|| MicrovmError::Boot("the agent's connection cannot be handed over".into()))
}

/// Reads one line byte by byte (nothing after it is consumed: the agent protocol follows).
fn read_line(stream: &mut UnixStream, timeout: Duration) -> Result<String, String> {
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Err("the guest closed its agent port before the box was ready".into()),
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "the guest was not ready within {} s",
                    timeout.as_secs()
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
        if line.len() > 64 * 1024 {
            return Err("the guest's answer is too long".into());
        }
    }
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// With `AIRLOCK_MICROVM_TRACE` set, prints `what`.
pub fn trace_note(what: &str) {
    if std::env::var_os("AIRLOCK_MICROVM_TRACE").is_some() {
        eprintln!("airlock microvm: {what}");
    }
}
