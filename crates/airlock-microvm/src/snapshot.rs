//! A VM's state saved to a file through QEMU's migration (to a descriptor passed over the
//! monitor), and restored with `-incoming`. Box checkpoints are one such file; template
//! snapshots are taken once per VM layout, while the init waits for its config, so every later
//! box of that layout starts by restoring instead of booting.

use crate::vm::Vm;
use crate::MicrovmError;
use serde_json::json;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long writing a snapshot may take.
const SAVE_TIMEOUT: Duration = Duration::from_secs(120);

/// A migration's bandwidth cap that never binds, bytes per second (QEMU's own default is
/// 128 MiB/s).
const UNTHROTTLED: u64 = 64 << 30;

/// The VM state file inside a box checkpoint's directory.
pub fn in_checkpoint(dir: &Path) -> PathBuf {
    dir.join("vm.state")
}

/// Saves `vm` to `path` (atomically). The VM is stopped for the save; it runs on afterwards
/// unless `keep_stopped`.
pub fn save(vm: &mut Vm, path: &Path, keep_stopped: bool) -> Result<(), MicrovmError> {
    let tmp = crate::cache::temp_beside(path)?;
    let result = save_to(vm, &tmp, keep_stopped);
    match result {
        Ok(()) => crate::cache::commit(&tmp, path),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn save_to(vm: &mut Vm, tmp: &Path, keep_stopped: bool) -> Result<(), MicrovmError> {
    let file = std::fs::File::create(tmp)
        .map_err(|e| MicrovmError::io(format!("cannot create {}", tmp.display()), e))?;
    vm.qmp.execute("stop", json!({}))?;
    vm.qmp.execute_with_fd(
        "getfd",
        json!({"fdname": "snapshot"}),
        Some(file.as_raw_fd()),
    )?;
    drop(file);
    // QEMU throttles a migration to 128 MiB/s by default (a live one shares the link with the
    // guest's traffic); this one goes to a local file with the VM stopped: unthrottled (the
    // save of a 4 GiB box's ~150 MiB took ~1 s, now the disk's and the CPU's speed).
    vm.qmp.execute(
        "migrate-set-parameters",
        json!({"max-bandwidth": UNTHROTTLED}),
    )?;
    vm.qmp.execute("migrate", json!({"uri": "fd:snapshot"}))?;
    vm.qmp.wait_migration(SAVE_TIMEOUT)?;
    if !keep_stopped {
        resume_after_save(vm)?;
    }
    Ok(())
}

/// `cont` after a save. QEMU reports the migration `completed` a moment before its migration
/// thread has cleaned up, and refuses `cont` until then ("Migration is not finalized yet"), which
/// a loaded machine makes likely: that answer is retried for up to 5 s, any other is the error.
fn resume_after_save(vm: &mut Vm) -> Result<(), MicrovmError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match vm.qmp.execute("cont", json!({})) {
            Ok(_) => return Ok(()),
            Err(MicrovmError::Qmp { message, .. })
                if message.contains("not finalized") && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Opens a snapshot to restore.
pub fn open(path: &Path) -> Result<std::fs::File, MicrovmError> {
    std::fs::File::open(path)
        .map_err(|e| MicrovmError::io(format!("cannot open the snapshot {}", path.display()), e))
}
