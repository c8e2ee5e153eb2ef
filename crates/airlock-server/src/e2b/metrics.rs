//! `GET /sandboxes/{id}/metrics`: one sample of what the box uses now, as its backend reports it
//! through the seam. Values the backend cannot measure are 0 (E2B's schema has no "unknown"):
//! CPU is the average since the box started (there is no earlier sample to difference against).

use airlock_runtime::backend::Usage;
use airlock_store::SandboxRecord;
use serde_json::{json, Value};

/// One metrics sample of sandbox `rec` from its `usage`.
pub fn sample(rec: &SandboxRecord, usage: &Usage, started_ms: Option<i64>, now_ms: i64) -> Value {
    let limits = &rec.policy["limits"];
    let host_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    let cpus = limits["cpus"]
        .as_f64()
        .map(|c| c.ceil().max(1.0) as u64)
        .unwrap_or(host_cpus);
    let mem_total = limits["memory"].as_u64().unwrap_or(0);
    let disk_total = limits["disk"].as_u64().unwrap_or(0);
    let elapsed_us = (now_ms - started_ms.unwrap_or(rec.created_ms)).max(1) as f64 * 1000.0;
    let cpu_pct = usage
        .cpu_usec
        .map(|used| (used as f64 / elapsed_us / cpus as f64 * 100.0).clamp(0.0, 100.0))
        .unwrap_or(0.0);
    json!({
        "timestamp": super::views::rfc3339(now_ms),
        "timestampUnix": now_ms / 1000,
        "cpuCount": cpus,
        "cpuUsedPct": cpu_pct,
        "memUsed": usage.memory_bytes.unwrap_or(0),
        "memTotal": mem_total,
        "memCache": 0,
        "diskUsed": usage.disk_bytes.unwrap_or(0),
        "diskTotal": disk_total,
    })
}
