//! Copies the agent's connection between the virtio-serial port and the agent's socket, one
//! thread each way.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

/// Starts both copies; they end when either side closes.
pub fn start(port: File, agent: UnixStream) -> std::io::Result<()> {
    let (mut port_in, mut port_out) = (port.try_clone()?, port);
    let (mut sock_in, mut sock_out) = (agent.try_clone()?, agent);
    std::thread::Builder::new()
        .name("relay-in".into())
        .spawn(move || {
            copy(&mut port_in, &mut sock_out, true);
            let _ = sock_out.shutdown(std::net::Shutdown::Write);
        })?;
    std::thread::Builder::new()
        .name("relay-out".into())
        .spawn(move || copy(&mut sock_in, &mut port_out, false))?;
    Ok(())
}

/// Copies until end-of-file or an error. The port reads 0 while the host is not connected
/// (after a restore, before the host reconnects): that is a pause, not an end.
fn copy(from: &mut impl Read, to: &mut impl Write, from_port: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) if from_port => std::thread::sleep(std::time::Duration::from_millis(10)),
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
