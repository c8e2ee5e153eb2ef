//! Linux isolation primitives for airlock.
//!
//! Each module is one layer: `rootfs` (the disposable root), `seccomp` (syscall allowlist as BPF),
//! `landlock` (filesystem and network access rules), `cgroup` (memory, pids and CPU limits, v2 or
//! v1), `caps` and `rlimits`. `spawn` starts a box from a [`spawn::BoxSpec`]; `child` is the only
//! code that runs between clone and exec. None of them decides policy.

pub mod box_root;
pub mod caps;
pub mod cgroup;
mod child;
pub mod heap;
pub mod identity;
pub mod idmap;
pub mod in_root;
mod init_memory;
pub mod landlock;
pub mod mount_attr;
pub mod net;
pub mod rlimits;
pub mod rootfs;
pub mod seccomp;
pub mod spawn;
pub mod sys;

pub use child::{StatusRecord, SETUP_FAILED};
pub use sys::write_all;
