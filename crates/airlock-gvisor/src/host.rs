//! `airlock gvisor-host`: the process that holds one gVisor box. It runs the native host's
//! control loop ([`airlock_native::host_main`], the same protocol as `airlock sandbox-host`),
//! so the owner's side is shared, and it owns everything the box needs on the host: the
//! private mount namespace and its tmpfs ([`Layout`]), the cgroup around runsc (removed by the
//! native cleanup sentinel if this process is killed), the proxy's network namespace and the
//! proxy itself.
//!
//! [`Layout`]: crate::layout::Layout

use crate::box_start::{BoxStart, RunningBox, StartError};
use crate::runsc::Runsc;
use airlock_native::{HeldBox, StartRequest, StartedBox};
use airlock_policy::Egress;
use airlock_runtime::backend::{Checkpoint, Usage};
use std::os::fd::OwnedFd;
use std::path::Path;

/// The `airlock gvisor-host` process: serves one gVisor box over `control` with `runsc`.
/// Returns the exit code.
pub fn gvisor_host_main(control: OwnedFd, runsc: Result<Runsc, String>) -> i32 {
    airlock_native::host_main(control, |req| start(req, runsc))
}

fn start(req: StartRequest, runsc: Result<Runsc, String>) -> Result<StartedBox, String> {
    let runsc = runsc?;
    let start = BoxStart::new(&runsc, &req.policy, &req.template, req.audit, req.on_event)
        .with_asker(req.asker);
    let mut running = match req.restore {
        None => start.start(),
        Some(dir) => start.restore(&dir),
    }
    .map_err(|StartError::Refused(message)| message)?;
    let Some(agent) = running.agent.take() else {
        return Err("the box's agent is not connected".into());
    };
    Ok(StartedBox {
        agent,
        receipt: running.receipt.clone(),
        env: running.env.clone(),
        cwd: running.cwd.clone(),
        capabilities: Some(running.capabilities()),
        held: Box::new(running),
    })
}

impl HeldBox for RunningBox {
    fn end_fd(&self) -> libc::c_int {
        self.runsc_pidfd()
    }

    fn end_reason(&self) -> String {
        if self.stopped {
            "the box was stopped after its checkpoint".into()
        } else if self.oom_killed() {
            "the box reached its memory limit (--memory) and the host's OOM killer ended its Sentry: gVisor has no OOM killer of its own, so the whole box ends".into()
        } else {
            format!(
                "the box's agent ended (runsc exited){}",
                self.runsc_complaint()
            )
        }
    }

    fn usage(&mut self) -> Usage {
        RunningBox::usage(self)
    }

    fn set_egress(&mut self, egress: &Egress) -> Result<(), String> {
        RunningBox::set_egress(self, egress)
    }

    fn pause(&mut self) -> Result<(), String> {
        RunningBox::pause(self)
    }

    fn resume(&mut self) -> Result<(), String> {
        RunningBox::resume(self)
    }

    fn park(&mut self) -> Result<(), String> {
        RunningBox::park(self)
    }

    fn unpark(&mut self) -> Result<(), String> {
        RunningBox::unpark(self)
    }

    fn checkpoint(&mut self, dir: &Path, then_stop: bool) -> Result<Checkpoint, String> {
        RunningBox::checkpoint(self, dir, then_stop)
    }

    fn close(&mut self) {
        RunningBox::close(self);
    }
}
