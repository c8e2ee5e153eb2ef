//! Resource limits applied with setrlimit in the box's command before exec.

use crate::sys::cvt;
use serde::Serialize;
use std::io;

/// The rlimits a box's command gets. `None` leaves the inherited value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RlimitPlan {
    /// RLIMIT_NOFILE.
    pub open_files: Option<u64>,
    /// RLIMIT_FSIZE: largest file the box may write.
    pub file_size: Option<u64>,
    /// RLIMIT_AS: the memory fallback when no cgroup can cap memory.
    pub address_space: Option<u64>,
    /// RLIMIT_NPROC: the process-count fallback when no cgroup can cap pids (counted per user
    /// namespace since Linux 5.14, so only the box's processes count).
    pub processes: Option<u64>,
}

impl RlimitPlan {
    /// Applies the plan; core dumps are always disabled.
    pub fn apply(&self) -> io::Result<()> {
        set(libc::RLIMIT_CORE, Some(0))?;
        set(libc::RLIMIT_NOFILE, self.open_files)?;
        set(libc::RLIMIT_FSIZE, self.file_size)?;
        set(libc::RLIMIT_AS, self.address_space)?;
        set(libc::RLIMIT_NPROC, self.processes)?;
        Ok(())
    }
}

fn set(resource: libc::__rlimit_resource_t, value: Option<u64>) -> io::Result<()> {
    let Some(v) = value else { return Ok(()) };
    let mut cur = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: cur is a valid rlimit for getrlimit to fill.
    cvt(unsafe { libc::getrlimit(resource, &mut cur) })?;
    // Never raise above the inherited hard limit (that needs privileges and would fail).
    let v = v.min(cur.rlim_max);
    let lim = libc::rlimit {
        rlim_cur: v,
        rlim_max: v,
    };
    // SAFETY: lim is a valid rlimit.
    cvt(unsafe { libc::setrlimit(resource, &lim) })?;
    Ok(())
}

/// Raises this process's soft limit on open descriptors to its hard limit (at most 2^20). The
/// egress proxy holds two descriptors per tunnel, and the common default soft limit of 1024
/// would cap a box near 500 tunnels however high `--max-connections` is. Boxes get their own
/// limit (`open_files` in the policy), so they do not inherit this one. Every airlock program
/// calls it first (`airlock`, `airlock-sandbox-host`).
pub fn raise_open_file_limit() {
    // SAFETY: rlimit is plain data for getrlimit to fill.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    let want = lim.rlim_max.min(1 << 20);
    if lim.rlim_cur < want {
        lim.rlim_cur = want;
        // SAFETY: a valid rlimit; raising the soft limit up to the hard one needs no privilege.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}
