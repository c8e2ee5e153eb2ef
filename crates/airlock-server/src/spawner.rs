//! Where boxes are started from: a fixed set of threads that live as long as the server.
//!
//! Each sandbox host asks for `PR_SET_PDEATHSIG`, which the kernel ties to the *thread* that
//! forked it, not to the process. A box started from a short-lived thread (tokio's blocking pool
//! retires idle threads) would be killed when that thread exits; starting every box from these
//! permanent threads keeps each box alive exactly as long as the server.

use airlock_policy::ResolvedPolicy;
use airlock_runtime::{RemoteSandbox, SandboxError, SandboxOptions};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

type Reply = Sender<Result<RemoteSandbox, SandboxError>>;
type Job = (ResolvedPolicy, SandboxOptions, Reply);

/// A pool of permanent threads that start sandbox hosts.
pub struct Spawner {
    jobs: Mutex<Sender<Job>>,
}

impl Spawner {
    /// Starts `threads` permanent threads that run `exe sandbox-host` on request.
    pub fn new(exe: PathBuf, threads: usize) -> std::io::Result<Spawner> {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let exe = exe.clone();
            std::thread::Builder::new()
                .name(format!("box-spawner-{i}"))
                .spawn(move || serve(&exe, &rx))?;
        }
        Ok(Spawner {
            jobs: Mutex::new(tx),
        })
    }

    /// Starts a box under `policy` from one of the permanent threads and waits for it.
    pub fn start(
        &self,
        policy: ResolvedPolicy,
        opts: SandboxOptions,
    ) -> Result<RemoteSandbox, SandboxError> {
        let (reply, answer) = channel();
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send((policy, opts, reply));
        if sent.is_err() {
            return Err(SandboxError::Io(std::io::Error::other(
                "the box spawner threads are gone",
            )));
        }
        answer.recv().map_err(|_| {
            SandboxError::Io(std::io::Error::other(
                "a box spawner thread died while starting a box",
            ))
        })?
    }
}

fn serve(exe: &std::path::Path, jobs: &Mutex<Receiver<Job>>) {
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((policy, opts, reply)) = job else {
            return;
        };
        let started = RemoteSandbox::start(exe, &policy, &opts);
        if let Err(Ok(sandbox)) = reply.send(started).map_err(|e| e.0) {
            // Nobody waits for it any more: end it at once.
            sandbox.kill();
        }
    }
}
