//! What a running box uses now.

use serde::{Deserialize, Serialize};

/// One sample of a box's resource use. A value the backend cannot measure is `None` (never a
/// made-up 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time used by every process of the box since it started, in microseconds.
    pub cpu_usec: Option<u64>,
    /// Memory charged to the box now, in bytes.
    pub memory_bytes: Option<u64>,
    /// The most memory the box has been charged at once, in bytes.
    pub memory_peak_bytes: Option<u64>,
    /// Bytes the box has written to its capped writable storage.
    pub disk_bytes: Option<u64>,
    /// Processes in the box now.
    pub processes: Option<u64>,
}
