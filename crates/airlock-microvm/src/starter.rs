//! QEMU is started from one permanent thread. Its parent-death signal (SIGKILL, so killing
//! airlock kills every VM) is tied by the kernel to the thread that forked it; a VM started
//! from a short-lived thread (tokio's blocking pool retires idle ones) would die with that
//! thread. One thread per process, made on first use.

use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock, PoisonError};

type Job = (Command, Sender<std::io::Result<Child>>);

static STARTER: OnceLock<Result<Mutex<Sender<Job>>, String>> = OnceLock::new();

/// Spawns `cmd` from the permanent starter thread.
pub fn spawn(cmd: Command) -> std::io::Result<Child> {
    let starter = STARTER
        .get_or_init(|| {
            let (tx, rx) = channel::<Job>();
            std::thread::Builder::new()
                .name("microvm-starter".into())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .map_err(|e| format!("cannot make the VM starter thread: {e}"))?;
            Ok(Mutex::new(tx))
        })
        .as_ref()
        .map_err(|e| std::io::Error::other(e.clone()))?;
    let (reply, answer) = channel();
    starter
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((cmd, reply))
        .map_err(|_| std::io::Error::other("the VM starter thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the VM starter thread died"))?
}
