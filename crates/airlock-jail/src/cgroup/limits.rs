//! Resource limits for one box, and their validation before anything is created.

use super::error::CgroupError;

/// CFS bandwidth period used for CPU limits, in microseconds (100 ms).
pub(crate) const CPU_PERIOD_US: u64 = 100_000;
/// Smallest CFS quota the kernel accepts, in microseconds (1 ms).
const MIN_CPU_QUOTA_US: u64 = 1_000;
/// Upper bound on `cpus`, only to keep the quota arithmetic far from overflow.
const MAX_CPUS: f64 = 1_000_000.0;

/// Resource limits for one box. `None` means "not limited by airlock".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupLimits {
    /// Memory cap in bytes (anonymous memory plus page cache; swap cannot be used to exceed it
    /// where the kernel lets us prevent that).
    pub memory_bytes: Option<u64>,
    /// Maximum number of tasks (processes and threads) alive at once.
    pub pids: Option<u64>,
    /// CPU bandwidth in CPUs (0.5 = half of one CPU per 100 ms period).
    pub cpus: Option<f64>,
}

impl CgroupLimits {
    /// True if no limit is requested.
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.pids.is_none() && self.cpus.is_none()
    }

    /// Checks every limit is in range, so that create() refuses bad input before touching the
    /// filesystem.
    pub(crate) fn validate(&self) -> Result<(), CgroupError> {
        if self.memory_bytes == Some(0) {
            return Err(CgroupError::InvalidLimit {
                limit: "memory_bytes",
                value: "0".to_owned(),
                fix: "a box needs some memory; give a positive number of bytes, or no memory limit",
            });
        }
        if self.pids == Some(0) {
            return Err(CgroupError::InvalidLimit {
                limit: "pids",
                value: "0".to_owned(),
                fix: "a box needs at least one process; give a positive number, or no pids limit",
            });
        }
        if let Some(cpus) = self.cpus {
            cpu_quota_us(cpus)?;
        }
        Ok(())
    }
}

/// The CFS quota (per [`CPU_PERIOD_US`]) for `cpus` CPUs.
pub(crate) fn cpu_quota_us(cpus: f64) -> Result<u64, CgroupError> {
    let invalid = |fix| CgroupError::InvalidLimit {
        limit: "cpus",
        value: cpus.to_string(),
        fix,
    };
    if !cpus.is_finite() || cpus <= 0.0 {
        return Err(invalid("give a positive number of CPUs such as 0.5 or 2"));
    }
    if cpus > MAX_CPUS {
        return Err(invalid("give at most 1000000 CPUs"));
    }
    // In range (0, 1e11] after the checks above, so the cast neither wraps nor saturates.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let quota = (cpus * CPU_PERIOD_US as f64).round() as u64;
    if quota < MIN_CPU_QUOTA_US {
        return Err(invalid(
            "the kernel's smallest CPU quota is 0.01 CPU; give at least 0.01",
        ));
    }
    Ok(quota)
}
