//! Startup recovery: sandboxes whose supervisor vanished while the server was down are marked
//! dead, so no record claims a box that no longer exists.

use rusqlite::params;

use super::clock::now_ms;
use super::error::StoreError;
use super::records::{SandboxRecord, SandboxState};
use super::sandboxes::{read_row, SANDBOX_COLUMNS};
use super::Store;

/// The reason recorded on sandboxes found dead at startup, unless the caller gives another.
pub const DEFAULT_RECOVERY_REASON: &str = "the server stopped while it ran";

/// Where Linux publishes the id of the current boot.
const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The id of the running kernel's boot, if the kernel publishes one.
pub fn current_boot_id() -> Option<String> {
    let text = std::fs::read_to_string(BOOT_ID_PATH).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// Whether `rec`'s supervisor can still be running: it has a pid, that pid exists now, and the
/// record's boot id is `boot_id` (the current boot). A pid reused by another process during the
/// same boot still reads as alive.
pub fn supervisor_is_alive(rec: &SandboxRecord, boot_id: Option<&str>) -> bool {
    let (Some(pid), Some(rec_boot), Some(boot)) =
        (rec.supervisor_pid, rec.boot_id.as_deref(), boot_id)
    else {
        return false;
    };
    if rec_boot != boot || pid <= 0 {
        // pid 0 and negative pids name process groups, never one supervisor.
        return false;
    }
    // SAFETY: signal 0 only checks that `pid` (a positive value, so a single process) exists and
    // may be signalled; nothing is delivered and no memory is shared with the call.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

impl Store {
    /// Marks every sandbox in a live state (queued, starting, running, paused) for which
    /// `is_alive` answers false as `dead`, with `reason` (or [`DEFAULT_RECOVERY_REASON`] if
    /// empty) and the time it was found; returns their ids. Ended sandboxes are left alone.
    /// All changes commit together or none do.
    pub fn recover(
        &self,
        is_alive: &dyn Fn(&SandboxRecord) -> bool,
        reason: &str,
    ) -> Result<Vec<String>, StoreError> {
        let reason = if reason.is_empty() {
            DEFAULT_RECOVERY_REASON
        } else {
            reason
        };
        let live: Vec<String> = SandboxState::LIVE
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let live = live.join(",");
        let tx = self.conn.unchecked_transaction()?;
        let raws = tx
            .prepare(&format!(
                "SELECT {SANDBOX_COLUMNS} FROM sandboxes WHERE state IN ({live}) ORDER BY rowid"
            ))?
            .query_map([], read_row)?
            .collect::<Result<Vec<_>, _>>()?;
        let ended_ms = now_ms();
        let mut changed = Vec::new();
        for raw in raws {
            let rec = self.decode(raw)?;
            if is_alive(&rec) {
                continue;
            }
            tx.execute(
                &format!(
                    "UPDATE sandboxes SET state = 'dead', reason = ?2, ended_ms = ?3 \
                     WHERE id = ?1 AND state IN ({live})"
                ),
                params![rec.id, reason, ended_ms],
            )?;
            changed.push(rec.id);
        }
        tx.commit()?;
        Ok(changed)
    }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
