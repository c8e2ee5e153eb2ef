//! What a VM uses, read from its QEMU process on the host: CPU time and resident memory. The
//! number of processes inside the guest is the guest's to know, so it is left unknown.

use airlock_runtime::backend::Usage;

/// A sample of QEMU process `pid`.
pub fn sample(pid: u32) -> Usage {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the 14th, stime 15th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // SAFETY: sysconf with a valid name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    let cpu_usec = match (ticks(11), ticks(12)) {
        (Some(u), Some(s)) => Some((u + s) * 1_000_000 / hz),
        _ => None,
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    Usage {
        cpu_usec,
        memory_bytes: kib("VmRSS:"),
        memory_peak_bytes: kib("VmHWM:"),
        disk_bytes: None,
        processes: None,
    }
}
