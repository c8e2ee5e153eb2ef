//! The host's control port: detaching the box's 9p shares before a checkpoint (QEMU cannot
//! save a VM with a 9p export attached) and attaching them again after it, or after a restore;
//! and setting the guest's clock to the host's after a restore or a resume.
//! One word a line in, `ok` or `error: <sentence>` a line out.

use super::{rootfs, sys};
use crate::config::{GuestConfig, CTL_ATTACH, CTL_CLOCK, CTL_DETACH, CTL_OK};
use std::fs::File;
use std::io::{Read, Write};
use std::time::Duration;

/// Serves `port` on a thread of its own for the box's life.
pub fn start(port: File, cfg: GuestConfig) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ctl".into())
        .spawn(move || serve(port, &cfg))
        .map(|_| ())
}

fn serve(mut port: File, cfg: &GuestConfig) {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match port.read(&mut byte) {
            // No host connected (between a save and a restore): wait.
            Ok(0) => std::thread::sleep(Duration::from_millis(5)),
            Ok(_) if byte[0] == b'\n' => {
                let text = String::from_utf8_lossy(&line).trim().to_string();
                let answer = match text.split_once(' ') {
                    Some((CTL_CLOCK, ns)) => match ns.parse::<u64>() {
                        Ok(ns) => sys::set_wall_clock(ns).map_err(|e| e.to_string()),
                        Err(_) => Err(format!("{CTL_CLOCK} takes Unix nanoseconds, not {ns:?}")),
                    },
                    _ => match text.as_str() {
                        CTL_DETACH => rootfs::detach_shares(cfg).map_err(|e| e.to_string()),
                        CTL_ATTACH => rootfs::attach_shares(cfg, &rootfs::mounted())
                            .map_err(|e| e.to_string()),
                        other => Err(format!("unknown control word {other:?}")),
                    },
                };
                line.clear();
                let reply = match answer {
                    Ok(()) => format!("{CTL_OK}\n"),
                    Err(e) => format!("error: {e}\n"),
                };
                let _ = port.write_all(reply.as_bytes());
            }
            Ok(_) if line.len() < 64 => line.push(byte[0]),
            Ok(_) => line.clear(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}
