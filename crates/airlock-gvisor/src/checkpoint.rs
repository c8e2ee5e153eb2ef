//! Checkpoints of a gVisor box: runsc writes the Sentry's memory (every process of the box,
//! its open files, the agent mid-session), and airlock copies the box's own writable files
//! (the scratch tmpfs: `/tmp`, home, `/dev/shm`, an image's writable layer) next to it, so
//! each restore starts from its own copy and two restores of one checkpoint never share files.
//! The workspace and grants are the caller's host files, not the box's state: a restored box
//! sees them as they are now.
//!
//! A checkpoint directory holds `gvisor.json` (which runsc wrote it: images do not move
//! between runsc versions or platforms), `memory/` (runsc's image) and `files/` (the scratch).
//!
//! The agent's connection survives: this process keeps runsc's end of it open, so a restore
//! in place hands the same socket to the new sandbox, and a restore elsewhere hands a fresh
//! one, on which the agent (whose hello was exchanged before the checkpoint) simply goes on
//! serving. A checkpoint is meant to be taken between requests: a request in flight at that
//! moment is answered on the connection of the box that continues.

use crate::box_start::{Launch, RunningBox};
use crate::runsc::{Runsc, RunscNetwork};
use airlock_runtime::backend::{Checkpoint, CheckpointKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MANIFEST: &str = "gvisor.json";
/// The manifest's format: bumped whenever the directory's layout changes.
const FORMAT: u32 = 1;
/// How long runsc may take to end after it wrote a checkpoint.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Why a checkpoint could not be written or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{0} is not a gVisor checkpoint (no readable {MANIFEST}): take one with a gVisor box")]
    NotACheckpoint(PathBuf),
    #[error("the checkpoint's {MANIFEST} is malformed: {0}")]
    Malformed(String),
    #[error("the checkpoint was written by {wrote} and this host has {here}: runsc images only restore under the runsc and platform that wrote them")]
    Mismatch { wrote: String, here: String },
    #[error("{0}")]
    Unrestorable(String),
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    runsc: String,
    platform: String,
}

impl Manifest {
    fn of(runsc: &Runsc) -> Manifest {
        Manifest {
            format: FORMAT,
            runsc: runsc.version.clone(),
            platform: runsc.platform.to_string(),
        }
    }
}

/// runsc's memory image in a checkpoint directory.
pub fn memory_of(dir: &Path) -> PathBuf {
    dir.join("memory")
}

/// The box's writable files in a checkpoint directory.
pub fn files_of(dir: &Path) -> PathBuf {
    dir.join("files")
}

/// Why a proxied box cannot be checkpointed at all.
const HOSTINET: &str = "a box started with --net proxy cannot be checkpointed: its sockets are host sockets in airlock's namespace (runsc --network=host), which runsc does not save";

/// Why a box with this network cannot be checkpointed under this runsc, or `None` when it
/// can: decided by what the runsc is (its release), never assumed.
pub fn unavailable(runsc: &Runsc, network: RunscNetwork) -> Option<String> {
    match network {
        RunscNetwork::None => runsc.restore_gap(),
        RunscNetwork::Host => Some(HOSTINET.into()),
    }
}

/// What a box with this network can checkpoint under this runsc.
pub fn kind(runsc: &Runsc, network: RunscNetwork) -> Option<CheckpointKind> {
    unavailable(runsc, network)
        .is_none()
        .then_some(CheckpointKind::Memory)
}

/// Checks that `dir` holds a checkpoint this runsc can restore.
pub fn check(dir: &Path, runsc: &Runsc) -> Result<(), CheckpointError> {
    if let Some(why) = runsc.restore_gap() {
        return Err(CheckpointError::Unrestorable(why));
    }
    let text = std::fs::read_to_string(dir.join(MANIFEST))
        .map_err(|_| CheckpointError::NotACheckpoint(dir.to_path_buf()))?;
    let wrote: Manifest =
        serde_json::from_str(&text).map_err(|e| CheckpointError::Malformed(e.to_string()))?;
    let here = Manifest::of(runsc);
    if wrote.format != FORMAT {
        return Err(CheckpointError::Malformed(format!(
            "format {} (this airlock reads {FORMAT})",
            wrote.format
        )));
    }
    if wrote != here {
        return Err(CheckpointError::Mismatch {
            wrote: format!("{}, platform {}", wrote.runsc, wrote.platform),
            here: format!("{}, platform {}", here.runsc, here.platform),
        });
    }
    if !memory_of(dir).is_dir() || !files_of(dir).is_dir() {
        return Err(CheckpointError::NotACheckpoint(dir.to_path_buf()));
    }
    Ok(())
}

/// Copies the tree `from` into the directory `to` (made if missing), keeping owners, modes,
/// times, links, special files and extended attributes (an overlay layer's whiteouts).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot make {}: {e}", to.display()))?;
    let out = Command::new("cp")
        .arg("-a")
        .arg("--")
        .arg(from.join("."))
        .arg(to)
        .env_clear()
        .env("PATH", airlock_policy::DEFAULT_PATH)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cp: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "cannot copy {} to {}: {}",
        from.display(),
        to.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

impl RunningBox {
    /// Writes the box's state into `dir`; the box runs on from it (restored in place, paused
    /// if it was) unless `then_stop`.
    pub fn checkpoint(&mut self, dir: &Path, then_stop: bool) -> Result<Checkpoint, String> {
        if let Some(why) = unavailable(&self.runsc, self.network) {
            return Err(why);
        }
        // A paused box's Sentry is frozen, and a frozen Sentry writes no image: it is thawed
        // for the checkpoint (its tasks stay paused by runsc). The restored box is paused
        // (and frozen) again below; one whose checkpoint failed is frozen again here.
        let was_frozen = self.frozen();
        self.thaw()?;
        let taken = self.checkpoint_thawed(dir, then_stop);
        if was_frozen && taken.is_err() && !self.stopped {
            self.refreeze();
        }
        taken
    }

    fn checkpoint_thawed(&mut self, dir: &Path, then_stop: bool) -> Result<Checkpoint, String> {
        let memory = memory_of(dir);
        std::fs::create_dir(&memory)
            .map_err(|e| format!("cannot make {}: {e}", memory.display()))?;
        let id = self.id.clone();
        self.runsc_call(&[
            "checkpoint".as_ref(),
            "--image-path".as_ref(),
            memory.as_os_str(),
            id.as_ref(),
        ])?;
        // runsc ends the sandbox once its image is written; its files are still from then on.
        self.wait_runsc_end()?;
        copy_tree(&self.layout.scratch, &files_of(dir))?;
        let manifest = serde_json::to_vec_pretty(&Manifest::of(&self.runsc))
            .map_err(|e| format!("cannot describe the checkpoint: {e}"))?;
        std::fs::write(dir.join(MANIFEST), manifest)
            .map_err(|e| format!("cannot write the checkpoint's {MANIFEST}: {e}"))?;
        if then_stop {
            self.stopped = true;
        } else {
            let was_paused = self.paused;
            self.paused = false;
            self.spawn(&Launch::Restore(&memory))
                .map_err(|crate::box_start::StartError::Refused(m)| m)?;
            if was_paused {
                self.pause()?;
            }
        }
        Ok(Checkpoint {
            kind: CheckpointKind::Memory,
            mechanism: "runsc-checkpoint".into(),
        })
    }

    /// Waits (bounded) for the `runsc run` or `restore` process to end, and reaps it.
    fn wait_runsc_end(&mut self) -> Result<(), String> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => {
                    return Err("runsc did not end after writing the checkpoint".into());
                }
                Err(e) => return Err(format!("cannot wait for runsc: {e}")),
            }
        }
    }
}
