//! Linux isolation primitives for airlock.
//!
//! Each module is one layer: `seccomp` (syscall allowlist as BPF), `landlock` (filesystem and
//! network access rules), `cgroup` (memory, pids and CPU limits, v2 or v1). They are used by the
//! box spawner; none of them decides policy.

pub mod cgroup;
pub mod landlock;
pub mod seccomp;
