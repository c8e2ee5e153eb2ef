//! Where native boxes are started from: a fixed set of threads that live as long as the program.
//!
//! Each sandbox host asks for `PR_SET_PDEATHSIG`, which the kernel ties to the *thread* that
//! forked it, not to the process. A box started from a short-lived thread (tokio's blocking pool
//! retires idle threads) would be killed when that thread exits; starting every box from these
//! permanent threads keeps each box alive exactly as long as the program. There is one pool per
//! process (made on first use), whatever number of backends the program makes and drops.

use crate::hosted_box::{HostProcess, HostedBox};
use airlock_policy::ResolvedPolicy;
use airlock_runtime::backend::{BackendError, BoxInstance, StartOptions, Template};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Threads that start native boxes: how many can start at once.
const STARTER_THREADS: usize = 8;

type Reply = Sender<Result<HostedBox, BackendError>>;
type Job = (
    PathBuf,
    HostProcess,
    ResolvedPolicy,
    Template,
    StartOptions,
    Reply,
);

static POOL: OnceLock<Result<Mutex<Sender<Job>>, String>> = OnceLock::new();

fn pool() -> Result<&'static Mutex<Sender<Job>>, BackendError> {
    POOL.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..STARTER_THREADS {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("box-starter-{i}"))
                .spawn(move || serve(&rx))
                .map_err(|e| format!("cannot make a box starter thread: {e}"))?;
        }
        Ok(Mutex::new(tx))
    })
    .as_ref()
    .map_err(|e| BackendError::Start(e.clone()))
}

/// Starts a box with `exe <host.subcommand>` from one of the permanent threads and waits for
/// it. Any backend whose boxes live in a host process of their own starts them here, so every
/// box dies with the program (even on SIGKILL) and lives exactly as long as it otherwise.
pub fn start_hosted(
    exe: &Path,
    host: HostProcess,
    policy: &ResolvedPolicy,
    template: &Template,
    opts: &StartOptions,
) -> Result<Box<dyn BoxInstance>, BackendError> {
    let (reply, answer) = channel();
    pool()?
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((
            exe.to_path_buf(),
            host,
            policy.clone(),
            template.clone(),
            opts.clone(),
            reply,
        ))
        .map_err(|_| BackendError::Start("the box starter threads are gone".into()))?;
    let hosted = answer.recv().map_err(|_| {
        BackendError::Start("a box starter thread died while starting a box".into())
    })??;
    Ok(Box::new(hosted))
}

fn serve(jobs: &Mutex<Receiver<Job>>) {
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((exe, host, policy, template, opts, reply)) = job else {
            return;
        };
        let started = HostedBox::start(&exe, host, &policy, &template, &opts);
        // Nobody waits for it any more: it ends at once (dropping it kills it).
        let _ = reply.send(started);
    }
}
