//! Protected paths that do not exist yet get an empty placeholder on the host for the duration of
//! the run, so the box can see them read-only instead of creating them. Placeholders are removed
//! afterwards if they are still empty and still the ones airlock made (by the supervisor, or by
//! the sentinel if airlock dies), through the directory descriptors kept from their creation:
//! their paths are never resolved again.

mod host_dir;
mod made;

pub(crate) use made::MadeEntry;

use airlock_policy::{FilesystemPolicy, ProtectedKind, ResolvedPolicy, PROTECTED_PATHS};
use host_dir::{Child, HostDir};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A placeholder created on the host, removed (if still empty and still the one made) through
/// the directory descriptor kept from its creation.
#[derive(Debug)]
pub struct Placeholder {
    pub(crate) entry: MadeEntry,
}

/// Creates placeholders for the missing protected paths of every protected mount, returning the
/// created placeholders and the inside paths that must be covered in addition to the plan's
/// (the first missing component, when a protected path's parent is missing too).
///
/// The walk below a mount's root never follows a symlink: a `.git` that is a symlink (a box with
/// a wider workspace could have made it) names a directory outside the mount, and a placeholder
/// made through it would be a file written outside. Such a path is left alone; the box's root
/// covers the symlink itself.
pub fn create(policy: &ResolvedPolicy) -> std::io::Result<(Vec<Placeholder>, Vec<PathBuf>)> {
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &policy.filesystem
    else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut made = Vec::new();
    let mut covers = Vec::new();
    for m in workspace.iter().chain(grants.iter()).filter(|m| m.protect) {
        for p in PROTECTED_PATHS {
            let comps: Vec<&OsStr> = Path::new(p.relative).iter().collect();
            match first_missing(&m.host, &comps, p.kind) {
                Ok(Some((depth, entry))) => {
                    let rel: PathBuf = comps[..depth].iter().collect();
                    if depth < comps.len() {
                        covers.push(m.inside.join(&rel));
                    }
                    made.push(Placeholder { entry });
                }
                Ok(None) => {}
                Err(e) => {
                    remove(&made);
                    let at = m.host.join(p.relative);
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot create placeholder for {}: {e}", at.display()),
                    ));
                }
            }
        }
    }
    Ok((made, covers))
}

/// Walks `comps` down from `root` without following symlinks and creates the first missing
/// component (a directory unless it is the last one of a file path). Returns how many
/// components the created path has and the entry made, or `None` when nothing is to be made:
/// everything exists, or a component is a symlink or not a directory (a `.git` file of a
/// worktree or submodule).
fn first_missing(
    root: &Path,
    comps: &[&OsStr],
    kind: ProtectedKind,
) -> std::io::Result<Option<(usize, MadeEntry)>> {
    let mut dir = match HostDir::open_root(root) {
        Ok(d) => d,
        // A writable grant of a single file: no protected path can be under it.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(e),
    };
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        match dir.child_kind(comp)? {
            Child::Dir if !last => match dir.descend(comp)? {
                Some(next) => dir = next,
                // Swapped for something else since: leave it alone.
                None => return Ok(None),
            },
            Child::Dir | Child::Other => return Ok(None),
            Child::Missing => {
                let kind = if last { kind } else { ProtectedKind::Dir };
                return Ok(dir.make(comp, kind)?.map(|entry| (i + 1, entry)));
            }
        }
    }
    Ok(None)
}

/// Removes placeholders that are still empty and still the ones airlock made, deepest first.
pub fn remove(made: &[Placeholder]) {
    for p in made.iter().rev() {
        p.entry.remove();
    }
}

#[cfg(test)]
#[path = "placeholders_tests.rs"]
mod tests;
