//! Resource limits for a box with Linux cgroups: memory, process count and CPU bandwidth, on the
//! unified hierarchy (v2) or the legacy per-controller hierarchies (v1).
//!
//! [`probe`] reports what this host lets the current user enforce. [`BoxCgroup::create`] makes
//! one cgroup per box *below the calling process's own cgroup* (never at a hierarchy root),
//! writes the limits or fails with a typed [`CgroupError`], and [`BoxCgroup::destroy`] kills
//! what is inside and removes it. Mount points are read from `/proc/self/mountinfo`, not assumed.
//!
//! Layout: `parse` (pure parsers of kernel text), `hierarchy` (where our cgroups are and what
//! can be delegated), `probe`, `limits`, `box_cgroup`, `cgroupfs` (file and signal operations),
//! `error`.

mod box_cgroup;
mod cgroupfs;
mod error;
mod freezer;
mod hierarchy;
mod limits;
mod parse;
mod probe;

pub use box_cgroup::{join_self, BoxCgroup, CgroupEvents};
pub use error::CgroupError;
pub use hierarchy::CgroupVersion;
pub use hierarchy::{discovery, Discovery};
pub use limits::CgroupLimits;
pub use probe::{probe, probe_writable, CgroupSupport};

#[cfg(test)]
#[path = "cgroup_tests.rs"]
mod tests;
