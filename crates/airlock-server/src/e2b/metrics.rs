//! `GET /sandboxes/{id}/metrics`: samples of what the box uses, as its backend reports it
//! through the seam. Values the backend cannot measure are 0 (E2B's schema has no "unknown").
//!
//! Each E2B-visible box keeps a bounded history ([`MAX_SAMPLES`], one every [`SAMPLE_EVERY`]
//! taken by [`spawn_sampler`], plus one per metrics request): `start`/`end` (Unix seconds)
//! select from it; without them the answer is one fresh sample. A sample's CPU is the share
//! used since the previous sample (since the box started for the first one).

use airlock_runtime::backend::Usage;
use airlock_store::SandboxRecord;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Samples kept per box: an hour at one every [`SAMPLE_EVERY`].
pub const MAX_SAMPLES: usize = 720;
/// How often the sampler takes a sample of every running box.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// The CPUs a box is sized to.
fn cpus_of(rec: &SandboxRecord) -> u64 {
    let host_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    rec.policy["limits"]["cpus"]
        .as_f64()
        .map(|c| c.ceil().max(1.0) as u64)
        .unwrap_or(host_cpus)
}

/// CPU share in percent of `cpus` for `used_usec` over `wall_ms`.
fn cpu_pct(used_usec: u64, wall_ms: i64, cpus: u64) -> f64 {
    let wall_us = wall_ms.max(1) as f64 * 1000.0;
    (used_usec as f64 / wall_us / cpus as f64 * 100.0).clamp(0.0, 100.0)
}

/// One metrics sample of sandbox `rec` from its `usage`, CPU averaged since the box started.
pub fn sample(rec: &SandboxRecord, usage: &Usage, started_ms: Option<i64>, now_ms: i64) -> Value {
    let limits = &rec.policy["limits"];
    let cpus = cpus_of(rec);
    let since = now_ms - started_ms.unwrap_or(rec.created_ms);
    json!({
        "timestamp": super::views::rfc3339(now_ms),
        "timestampUnix": now_ms / 1000,
        "cpuCount": cpus,
        "cpuUsedPct": usage.cpu_usec.map(|u| cpu_pct(u, since, cpus)).unwrap_or(0.0),
        "memUsed": usage.memory_bytes.unwrap_or(0),
        "memTotal": limits["memory"].as_u64().unwrap_or(0),
        "memCache": 0,
        "diskUsed": usage.disk_bytes.unwrap_or(0),
        "diskTotal": limits["disk"].as_u64().unwrap_or(0),
    })
}

struct Sample {
    ms: i64,
    cpu_usec: Option<u64>,
    value: Value,
}

/// A box's recent samples, oldest first, at most [`MAX_SAMPLES`].
#[derive(Default)]
pub(crate) struct History {
    samples: Mutex<VecDeque<Sample>>,
}

impl History {
    /// Records a sample taken at `now_ms`; its CPU becomes the share since the previous one.
    pub fn record(&self, rec: &SandboxRecord, usage: &Usage, started_ms: Option<i64>, now_ms: i64) {
        let mut value = sample(rec, usage, started_ms, now_ms);
        let mut samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(prev) = samples.back() {
            if now_ms <= prev.ms {
                return;
            }
            if let (Some(before), Some(now)) = (prev.cpu_usec, usage.cpu_usec) {
                value["cpuUsedPct"] = json!(cpu_pct(
                    now.saturating_sub(before),
                    now_ms - prev.ms,
                    cpus_of(rec)
                ));
            }
        }
        if samples.len() >= MAX_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(Sample {
            ms: now_ms,
            cpu_usec: usage.cpu_usec,
            value,
        });
    }

    /// The samples taken from `start` to `end` (Unix seconds, both inclusive; open when
    /// absent), oldest first.
    pub fn between(&self, start: Option<i64>, end: Option<i64>) -> Vec<Value> {
        let samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        samples
            .iter()
            .filter(|s| {
                start.is_none_or(|t| s.ms / 1000 >= t) && end.is_none_or(|t| s.ms / 1000 <= t)
            })
            .map(|s| s.value.clone())
            .collect()
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<Value> {
        let samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        samples.back().map(|s| s.value.clone())
    }
}

/// Takes a sample of every running box every [`SAMPLE_EVERY`] until `stopping`, on a thread
/// of its own.
pub fn spawn_sampler(
    state: crate::state::AppState,
    stopping: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("e2b-metrics".into())
        .spawn(move || {
            let tick = Duration::from_millis(250);
            let mut waited = SAMPLE_EVERY;
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                if waited >= SAMPLE_EVERY {
                    waited = Duration::ZERO;
                    for info in state.manager.list(
                        &[airlock_sessions::SessionState::Running],
                        &Default::default(),
                    ) {
                        let _ = super::control::record_sample(&state, &info.id);
                    }
                }
                std::thread::sleep(tick);
                waited += tick;
            }
        })
}
