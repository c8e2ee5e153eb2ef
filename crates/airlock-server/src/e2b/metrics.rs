//! `GET /sandboxes/{id}/metrics`: one sample of what the box uses now, read from its cgroup
//! (cgroup v2) when it has one. Values the box cannot report are 0: CPU is the average since
//! the box started (there is no earlier sample to difference against), and disk use is not
//! measured.

use airlock_runtime::store::SandboxRecord;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The cgroup v2 directory of process `pid`, if it is in one below the root.
fn cgroup_dir(pid: i32) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    if path == "/" || path.is_empty() || path.contains("..") {
        return None;
    }
    Some(PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/')))
}

fn read_u64(path: PathBuf) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn cpu_usage_usec(dir: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}

/// One metrics sample of sandbox `rec` whose init process is `pid`.
pub fn sample(
    rec: &SandboxRecord,
    pid: Option<i32>,
    started_ms: Option<i64>,
    now_ms: i64,
) -> Value {
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
    let dir = pid.filter(|p| *p > 0).and_then(cgroup_dir);
    let mem_used = dir
        .as_ref()
        .and_then(|d| read_u64(d.join("memory.current")))
        .unwrap_or(0);
    let elapsed_us = (now_ms - started_ms.unwrap_or(rec.created_ms)).max(1) as f64 * 1000.0;
    let cpu_pct = dir
        .as_ref()
        .and_then(|d| cpu_usage_usec(d))
        .map(|used| (used as f64 / elapsed_us / cpus as f64 * 100.0).clamp(0.0, 100.0))
        .unwrap_or(0.0);
    json!({
        "timestamp": super::views::rfc3339(now_ms),
        "timestampUnix": now_ms / 1000,
        "cpuCount": cpus,
        "cpuUsedPct": cpu_pct,
        "memUsed": mem_used,
        "memTotal": mem_total,
        "memCache": 0,
        "diskUsed": 0,
        "diskTotal": disk_total,
    })
}
