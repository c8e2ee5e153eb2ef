//! Snapshots below both APIs: taking one of a box into the store, starting a box from one (only
//! after the store has checked it), and deleting a sandbox's snapshots when it ends. The store
//! owns the files ([`SnapshotArea`]) and the records; the backend only writes into the empty
//! directory it is given and reads the checked one back.

use crate::factory::{BoxHandle, ContextRun, LiveContext};
use crate::observer::{lock, SharedStore};
use airlock_policy::ResolvedPolicy;
use airlock_runtime::backend::{
    Backend, CheckpointKind, CheckpointOptions, StartOptions, Template,
};
use airlock_runtime::{CodeContext, Language, LiveSandbox};
use airlock_store::{sha256_hex, SnapshotArea, SnapshotOrigin, SnapshotPurpose, SnapshotRecord};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a memory snapshot carries besides the backend's files: the box's interpreter contexts,
/// whose processes live on in the restored memory.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Carry {
    contexts: Vec<CarriedContext>,
    next_context: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct CarriedContext {
    id: String,
    cwd: Option<String>,
    language: Language,
    ctx: CodeContext,
}

/// A box started from a snapshot, with what the snapshot said about it.
pub struct Restored {
    pub handle: BoxHandle,
    pub record: SnapshotRecord,
}

/// The server's snapshots: files under `<data-dir>/snapshots`, records in the store.
pub struct SnapshotService {
    area: SnapshotArea,
    store: SharedStore,
}

fn kind_name(kind: CheckpointKind) -> &'static str {
    match kind {
        CheckpointKind::Memory => "memory",
        CheckpointKind::Files => "files",
    }
}

/// The digest that ties a snapshot to the policy it was taken under.
pub fn policy_digest(payload: &serde_json::Value) -> String {
    sha256_hex(&serde_json::to_vec(payload).unwrap_or_default())
}

fn now_ms() -> i64 {
    use airlock_sessions::Clock;
    airlock_sessions::SystemClock.now_ms()
}

impl SnapshotService {
    pub fn new(area: SnapshotArea, store: SharedStore) -> SnapshotService {
        SnapshotService { area, store }
    }

    /// Checkpoints the box of sandbox `sandbox_id` (policy `payload`) into a new snapshot and
    /// records it. With `then_stop` the box ends once its state is written.
    pub fn take(
        &self,
        sandbox_id: &str,
        handle: &mut BoxHandle,
        payload: &serde_json::Value,
        purpose: SnapshotPurpose,
        name: Option<String>,
        then_stop: bool,
    ) -> Result<SnapshotRecord, String> {
        let policy: ResolvedPolicy = serde_json::from_value(payload.clone())
            .map_err(|e| format!("the sandbox's policy cannot be read back ({e})"))?;
        let id = crate::secrets::random_hex(10)
            .map(|h| format!("snap_{h}"))
            .map_err(|e| format!("no random bytes for the snapshot's id: {e}"))?;
        let staging = self.area.stage(&id).map_err(|e| e.to_string())?;
        // The contexts are read before a checkpoint that ends the box (their ids and channels
        // are what the restored agent session still has).
        let carry = carry_of(handle);
        let taken = handle
            .sandbox()
            .checkpoint(&staging.data_dir(), &CheckpointOptions { then_stop })
            .map_err(|e| e.to_string())?;
        let carry = match taken.kind {
            CheckpointKind::Memory => serde_json::to_value(&carry).unwrap_or_default(),
            CheckpointKind::Files => serde_json::Value::Null,
        };
        let (template, template_digest) = match &policy.template {
            Some(t) => (t.name.clone(), Some(t.digest.clone())),
            None => ("host".to_string(), None),
        };
        let origin = SnapshotOrigin {
            sandbox_id: sandbox_id.to_string(),
            backend: policy.backend.to_string(),
            kind: kind_name(taken.kind).to_string(),
            mechanism: taken.mechanism.clone(),
            policy_sha256: policy_digest(payload),
            template,
            template_digest,
            carry,
        };
        let created_ms = now_ms();
        let (manifest, manifest_sha256) = self
            .area
            .commit(staging, origin, created_ms)
            .map_err(|e| e.to_string())?;
        let record = SnapshotRecord {
            id: id.clone(),
            sandbox_id: sandbox_id.to_string(),
            name,
            purpose,
            backend: policy.backend.to_string(),
            kind: kind_name(taken.kind).to_string(),
            mechanism: taken.mechanism,
            bytes: manifest.bytes(),
            manifest_sha256,
            created_ms,
        };
        if let Err(e) = lock(&self.store).insert_snapshot(&record) {
            let _ = self.area.remove(&id);
            return Err(format!("the snapshot cannot be recorded: {e}"));
        }
        Ok(record)
    }

    /// Starts a box from snapshot `snapshot_id` for a sandbox whose stored policy is `payload`
    /// (`policy` is the same policy read back, with the secrets' values it holds): the
    /// snapshot must be recorded, written by the policy's backend under this very policy, and
    /// its files exactly what its manifest lists (a truncated or altered file is refused, never
    /// restored). A memory snapshot's interpreter contexts are taken over.
    pub fn restore(
        &self,
        snapshot_id: &str,
        backend: &dyn Backend,
        payload: &serde_json::Value,
        policy: &ResolvedPolicy,
        opts: &StartOptions,
    ) -> Result<Restored, String> {
        let record = lock(&self.store)
            .get_snapshot(snapshot_id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no snapshot {snapshot_id:?} is recorded"))?;
        if record.backend != policy.backend.to_string() {
            return Err(format!(
                "snapshot {snapshot_id} was taken by the {} backend; a {} box cannot start from it",
                record.backend, policy.backend
            ));
        }
        let (dir, manifest) = self
            .area
            .verified(snapshot_id, &record.manifest_sha256)
            .map_err(|e| e.to_string())?;
        if manifest.origin.policy_sha256 != policy_digest(payload) {
            return Err(format!(
                "snapshot {snapshot_id} was taken under another policy; a box starts from it only under the policy it was taken with"
            ));
        }
        let instance = backend
            .restore(&dir, policy, &Template::of_policy(policy), opts)
            .map_err(|e| format!("the box could not be restored: {e}"))?;
        let sandbox = LiveSandbox::connect(instance)
            .map_err(|e| format!("the restored box's agent did not answer: {e}"))?;
        let carry: Carry = serde_json::from_value(manifest.origin.carry).unwrap_or_default();
        let mut handle = BoxHandle::new(sandbox);
        take_over(&mut handle, carry);
        Ok(Restored { handle, record })
    }

    /// The snapshots of a sandbox, oldest first.
    pub fn of(&self, sandbox_id: &str) -> Result<Vec<SnapshotRecord>, String> {
        lock(&self.store)
            .snapshots_of(sandbox_id)
            .map_err(|e| e.to_string())
    }

    /// The snapshot the last pause of a sandbox saved, if any.
    pub fn pause_snapshot(&self, sandbox_id: &str) -> Option<SnapshotRecord> {
        self.of(sandbox_id)
            .ok()?
            .into_iter()
            .rev()
            .find(|r| r.purpose == SnapshotPurpose::Pause)
    }

    /// Deletes one snapshot (files and record).
    pub fn delete(&self, snapshot_id: &str) {
        if let Err(e) = self.area.remove(snapshot_id) {
            eprintln!("airlock serve: cannot delete snapshot {snapshot_id}: {e}");
        }
        let _ = lock(&self.store).delete_snapshot(snapshot_id);
    }

    /// Deletes the pause snapshots of a sandbox (once it runs again, they are stale).
    pub fn delete_pause_snapshots(&self, sandbox_id: &str) {
        for r in self.of(sandbox_id).unwrap_or_default() {
            if r.purpose == SnapshotPurpose::Pause {
                self.delete(&r.id);
            }
        }
    }

    /// Deletes every snapshot of a sandbox (it ended).
    pub fn delete_all_of(&self, sandbox_id: &str) {
        for r in self.of(sandbox_id).unwrap_or_default() {
            self.delete(&r.id);
        }
    }

    /// Removes snapshot directories that no record claims (a crash between the rename and the
    /// record). Returns how many.
    pub fn remove_unclaimed(&self) -> usize {
        let claimed: std::collections::HashSet<String> = lock(&self.store)
            .all_snapshots()
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.id)
            .collect();
        let mut removed = 0;
        for id in self.area.ids_on_disk().unwrap_or_default() {
            if !claimed.contains(&id) && self.area.remove(&id).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// The box's interpreter contexts that are not running code now (one mid-execution cannot be
/// carried: its stream is in the middle of an answer).
fn carry_of(handle: &mut BoxHandle) -> Carry {
    let next_context = handle.next_context();
    let (_, contexts) = handle.parts();
    let mut carry = Carry {
        contexts: Vec::new(),
        next_context,
    };
    for (id, live) in contexts.iter() {
        let Ok(run) = live.run.try_lock() else {
            continue;
        };
        if let Ok(ctx) = serde_json::to_value(&run.ctx).and_then(serde_json::from_value) {
            carry.contexts.push(CarriedContext {
                id: id.clone(),
                cwd: live.cwd.clone(),
                language: live.language,
                ctx,
            });
        }
    }
    carry
}

/// Takes over the carried contexts on the restored box's connection; one whose driver is gone
/// is dropped (the next call starts it afresh).
fn take_over(handle: &mut BoxHandle, carry: Carry) {
    handle.set_next_context(carry.next_context);
    let (sandbox, contexts) = handle.parts();
    let mut taken: HashMap<String, Arc<LiveContext>> = HashMap::new();
    for c in carry.contexts {
        let mut session = sandbox.new_channel();
        let Ok(ctx) = session.reattach_context(c.ctx) else {
            continue;
        };
        taken.insert(
            c.id,
            Arc::new(LiveContext {
                cwd: c.cwd,
                language: c.language,
                pid: ctx.pid,
                run: Mutex::new(ContextRun { session, ctx }),
            }),
        );
    }
    contexts.extend(taken);
}
