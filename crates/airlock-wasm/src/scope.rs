//! The directories a WASM box has: the file operations of the agent protocol are allowed
//! under them and refused elsewhere, so the files API shows what the guest sees and no more.
//! (The box's mounts stay the enforcement; this keeps the two views the same.)

use crate::run_spec::Preopen;
use airlock_protocol::Op;
use std::path::{Component, Path, PathBuf};

/// The preopened directories of one box.
#[derive(Debug, Clone)]
pub struct Scope {
    dirs: Vec<PathBuf>,
}

/// `path` made absolute and free of `.` and `..`, lexically; `None` if it is relative.
fn normalize(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

impl Scope {
    pub fn new(dirs: &[Preopen]) -> Scope {
        Scope {
            dirs: dirs.iter().map(|d| PathBuf::from(&d.path)).collect(),
        }
    }

    /// Whether `path` is one of the directories or under one.
    pub fn contains(&self, path: &str) -> bool {
        normalize(path).is_some_and(|p| self.dirs.iter().any(|d| p.starts_with(d)))
    }

    fn check(&self, path: &str) -> Result<(), String> {
        if self.contains(path) {
            return Ok(());
        }
        let dirs: Vec<_> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        Err(format!(
            "{path} does not exist in this wasm box: its only directories are {}",
            dirs.join(", ")
        ))
    }

    /// Refuses a file operation on a path outside the box's directories.
    pub fn check_op(&self, op: &Op) -> Result<(), String> {
        match op {
            Op::ReadFile { path }
            | Op::WriteFile { path, .. }
            | Op::ListDir { path, .. }
            | Op::Stat { path }
            | Op::MakeDir { path, .. }
            | Op::Remove { path, .. }
            | Op::Watch { path, .. } => self.check(path),
            Op::Rename { from, to } => self.check(from).and_then(|()| self.check(to)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
