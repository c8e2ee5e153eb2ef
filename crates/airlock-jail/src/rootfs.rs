//! The disposable root of an isolated box: planned as data in the supervisor, built in the box's
//! first process (inside its own user and mount namespaces) and entered with pivot_root.
//!
//! Phase 1 runs before pivot_root: every host source is opened (O_PATH) first, then a fresh tmpfs
//! becomes the new root and each source is bind-mounted into it through its descriptor, so a
//! source can never be shadowed or redirected by the new tree. Phase 2 runs after pivot_root,
//! where paths resolve inside the box (a symlink in the workspace that points at `/home/alice/.ssh`
//! points at nothing): protected paths and denied paths are covered, /proc is masked and the root
//! itself becomes read-only.

mod build;
mod plan;
mod template_root;

pub use build::enter;
pub use plan::{
    protected_under, Cover, FsOp, HostFs, HostNode, NodeKind, RealHostFs, RootBase, RootfsPlan,
    ETC_ENTRIES, PROC_MASKED, PROC_READ_ONLY,
};
use std::io;
use std::path::PathBuf;

/// An error while building the root, naming the step and path.
#[derive(Debug, thiserror::Error)]
#[error("{step} {path}: {source}")]
pub struct RootfsError {
    pub step: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

#[cfg(test)]
#[path = "rootfs_tests.rs"]
mod tests;
