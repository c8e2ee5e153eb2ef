//! Protected paths that do not exist yet get an empty placeholder on the host for the duration of
//! the run, so the box can see them read-only instead of creating them. Placeholders are removed
//! afterwards if they are still empty (by the supervisor, or by the sentinel if airlock dies).

use airlock_policy::{FilesystemPolicy, ProtectedKind, ResolvedPolicy, PROTECTED_PATHS};
use std::path::{Path, PathBuf};

/// A placeholder created on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub host: PathBuf,
    pub dir: bool,
}

/// Creates placeholders for the missing protected paths of every protected mount, returning the
/// created placeholders and the inside paths that must be covered in addition to the plan's
/// (the first missing component, when a protected path's parent is missing too).
pub fn create(policy: &ResolvedPolicy) -> std::io::Result<(Vec<Placeholder>, Vec<PathBuf>)> {
    let FilesystemPolicy::Isolated { workspace, grants, .. } = &policy.filesystem else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut made = Vec::new();
    let mut covers = Vec::new();
    for m in workspace.iter().chain(grants.iter()).filter(|m| m.protect) {
        for p in PROTECTED_PATHS {
            let rel = Path::new(p.relative);
            // Walk down: stop at the first missing component and make that one.
            let mut host = m.host.clone();
            let mut inside = m.inside.clone();
            let comps: Vec<_> = rel.components().collect();
            for (i, comp) in comps.iter().enumerate() {
                host.push(comp);
                inside.push(comp);
                if std::fs::symlink_metadata(&host).is_ok() {
                    continue;
                }
                let last = i + 1 == comps.len();
                let dir = !last || p.kind == ProtectedKind::Dir;
                let res = if dir {
                    std::fs::create_dir(&host)
                } else {
                    std::fs::OpenOptions::new().write(true).create_new(true).open(&host).map(|_| ())
                };
                match res {
                    Ok(()) => {
                        made.push(Placeholder { host: host.clone(), dir });
                        if !last {
                            covers.push(inside.clone());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    // A parent is not a directory (a `.git` file of a worktree or submodule): the
                    // path cannot exist; the box's root covers that parent read-only instead.
                    Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {}
                    Err(e) => {
                        remove(&made);
                        return Err(std::io::Error::new(e.kind(), format!("cannot create placeholder {}: {e}", host.display())));
                    }
                }
                break;
            }
        }
    }
    Ok((made, covers))
}

/// Removes placeholders that are still empty, deepest first.
pub fn remove(made: &[Placeholder]) {
    for p in made.iter().rev() {
        remove_one(&p.host, p.dir);
    }
}

/// Removes one placeholder if it is still empty (used by the sentinel too).
pub fn remove_one(host: &Path, dir: bool) {
    if dir {
        let _ = std::fs::remove_dir(host);
    } else if std::fs::symlink_metadata(host).map(|m| m.is_file() && m.len() == 0).unwrap_or(false) {
        let _ = std::fs::remove_file(host);
    }
}
