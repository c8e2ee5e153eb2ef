//! Applying a box's workspace changes to the host.
//!
//! With `changes = "apply"` the box sees its workspace through an overlay whose lower layer is
//! the host workspace (read-only) and whose upper layer, the change layer, lives on the box's
//! size-capped tmpfs. The box's init hands the supervisor a descriptor of the layer; once every
//! process of the box is gone (nothing can change the layer any more), the supervisor replays
//! it onto the host workspace.
//!
//! That replay writes content and names the box chose, with the host user's rights, so it is
//! as careful as airlock's other host-side writes: the host workspace is walked with directory
//! descriptors, no symlink on the host side is ever followed (a box may have planted one in an
//! earlier run), nothing is written outside the workspace, set-ID bits are dropped, protected
//! paths are skipped and reported, and every entry that cannot be applied is reported without
//! stopping the rest.

mod at;
mod guard;
mod walk;

use airlock_runtime::{ChangeIssue, ChangesReport};
use std::os::fd::OwnedFd;
use std::path::Path;

/// Applies the change layer `layer` (a directory descriptor of the overlay's upper layer) to
/// the host directory `workspace`. Call only once no process of the box is left.
pub fn apply(layer: &OwnedFd, workspace: &Path) -> ChangesReport {
    walk::apply(layer, workspace)
}
