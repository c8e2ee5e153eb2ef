//! Which entries of the change layer touch protected paths.

use airlock_policy::PROTECTED_PATHS;
use std::path::Path;

/// How a path relative to the workspace relates to the protected paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Guard {
    /// Nothing protected at or below it.
    Free,
    /// A directory on the way to a protected path (`.git`): its other entries may change, but
    /// it is never removed, replaced or emptied.
    Holds,
    /// A protected path or something below it: never changed.
    Protected(&'static str),
}

pub(super) fn guard(rel: &Path) -> Guard {
    if let Some(p) = PROTECTED_PATHS
        .iter()
        .find(|p| rel.starts_with(Path::new(p.relative)))
    {
        return Guard::Protected(p.reason);
    }
    if PROTECTED_PATHS
        .iter()
        .any(|p| Path::new(p.relative).starts_with(rel))
    {
        return Guard::Holds;
    }
    Guard::Free
}
