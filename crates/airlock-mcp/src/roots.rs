//! The paths a box's file tools may touch: the policy's granted roots (workspace, `--read`,
//! `--write`) plus the box's own scratch space (`/tmp`, the home), minus `--deny`. Paths are
//! resolved lexically against the box's working directory and compared component by component,
//! so `/workspace/src-other` is not inside `/workspace/src`. The box enforces the same (mounts,
//! Landlock); this check makes the refusal readable and keeps calls that cannot succeed away
//! from the box.

use airlock_policy::{Access, FilesystemPolicy, ResolvedPolicy, INSIDE_HOME};
use std::path::{Component, Path, PathBuf};

/// One granted directory, as the box sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub path: PathBuf,
    pub writable: bool,
    /// Where the grant comes from (shown in denials).
    pub source: &'static str,
}

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathDenied {
    #[error("the path is empty")]
    Empty,
    #[error("{path} climbs above / with '..'")]
    Escapes { path: String },
    #[error("{path} is outside every directory this box was granted ({roots})")]
    Outside { path: String, roots: String },
    #[error("{path} is hidden by the policy's deny rule {rule}")]
    Hidden { path: String, rule: String },
    #[error("{path} is inside {root}, which this box may read but not write ({grant})")]
    ReadOnly {
        path: String,
        root: String,
        grant: &'static str,
    },
}

impl PathDenied {
    /// The grant that would allow the refused access, for the model to relay to its user.
    pub fn remedy(&self) -> String {
        match self {
            PathDenied::Empty | PathDenied::Escapes { .. } => "give an absolute path, or one relative to the box's working directory".into(),
            PathDenied::Outside { path, .. } => format!("start airlock with --read {path} (read-only) or --write {path} (writable), or use a path inside a granted directory"),
            PathDenied::Hidden { rule, .. } => format!("remove --deny {rule} from airlock's flags"),
            PathDenied::ReadOnly { path, .. } => format!("start airlock with --write {path}, or --profile workspace-write for the workspace"),
        }
    }
}

/// The roots of one box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// `None`: the host's whole filesystem (profile full-access).
    roots: Option<Vec<Root>>,
    deny: Vec<PathBuf>,
    cwd: PathBuf,
}

impl Roots {
    /// The roots `policy` grants.
    pub fn of(policy: &ResolvedPolicy) -> Roots {
        let cwd = policy.cwd.clone();
        match &policy.filesystem {
            FilesystemPolicy::Host => Roots {
                roots: None,
                deny: Vec::new(),
                cwd,
            },
            FilesystemPolicy::Isolated {
                workspace,
                grants,
                deny,
            } => {
                let mut roots = Vec::new();
                if let Some(ws) = workspace {
                    roots.push(Root {
                        path: ws.inside.clone(),
                        writable: ws.access == Access::ReadWrite,
                        source: "the workspace",
                    });
                }
                for g in grants {
                    let source = if g.access == Access::ReadWrite {
                        "a --write grant"
                    } else {
                        "a --read grant"
                    };
                    roots.push(Root {
                        path: g.inside.clone(),
                        writable: g.access == Access::ReadWrite,
                        source,
                    });
                }
                roots.push(Root {
                    path: "/tmp".into(),
                    writable: true,
                    source: "the box's scratch /tmp",
                });
                roots.push(Root {
                    path: INSIDE_HOME.into(),
                    writable: true,
                    source: "the box's scratch home",
                });
                Roots {
                    roots: Some(roots),
                    deny: deny.clone(),
                    cwd,
                }
            }
        }
    }

    /// Every root (empty for full access).
    pub fn list(&self) -> &[Root] {
        self.roots.as_deref().unwrap_or(&[])
    }

    /// The box's working directory (where relative paths start).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves `path` and checks that it may be read (or written, with `write`).
    pub fn check(&self, path: &str, write: bool) -> Result<PathBuf, PathDenied> {
        if path.is_empty() {
            return Err(PathDenied::Empty);
        }
        let full = normalize(&self.cwd.join(path)).ok_or_else(|| PathDenied::Escapes {
            path: path.to_string(),
        })?;
        let shown = full.to_string_lossy().into_owned();
        if let Some(rule) = self.deny.iter().find(|d| full.starts_with(d)) {
            return Err(PathDenied::Hidden {
                path: shown,
                rule: rule.to_string_lossy().into_owned(),
            });
        }
        let Some(roots) = &self.roots else {
            return Ok(full);
        };
        // The most specific root decides (a writable grant inside a read-only workspace).
        let best = roots
            .iter()
            .filter(|r| full.starts_with(&r.path))
            .max_by_key(|r| r.path.components().count());
        match best {
            None => Err(PathDenied::Outside {
                path: shown,
                roots: roots
                    .iter()
                    .map(|r| r.path.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            Some(r) if write && !r.writable => Err(PathDenied::ReadOnly {
                path: shown,
                root: r.path.to_string_lossy().into_owned(),
                grant: r.source,
            }),
            Some(_) => Ok(full),
        }
    }
}

/// `/a/./b/../c` → `/a/c`, lexically; `None` if `..` climbs above `/`. `Path::starts_with`
/// compares whole components, which is what makes the root check boundary-exact.
fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "roots_tests.rs"]
mod tests;
