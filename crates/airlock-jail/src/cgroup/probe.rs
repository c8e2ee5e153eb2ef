//! `probe()`: what this host lets the current user enforce with cgroups.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::hierarchy::{self, CgroupVersion, Controller};

/// What this host lets the current user enforce with cgroups, per controller, and why not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CgroupSupport {
    /// The interface limits would be written through; `None` if no cgroup hierarchy is usable.
    pub version: Option<CgroupVersion>,
    /// A memory cap can be enforced.
    pub memory: bool,
    /// A process-count cap can be enforced.
    pub pids: bool,
    /// A CPU bandwidth cap can be enforced.
    pub cpu: bool,
    /// Why some controller is unavailable (one sentence per controller), `None` if all are.
    pub reason: Option<String>,
}

impl CgroupSupport {
    /// True if memory, pids and cpu limits can all be enforced.
    pub fn is_complete(&self) -> bool {
        self.memory && self.pids && self.cpu
    }
}

static PROBE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Reports which limits `BoxCgroup::create` can enforce here, and why the others cannot.
///
/// Reads `/proc/self/cgroup`, `/proc/self/mountinfo` and a few control files, and checks that a
/// child cgroup can really be made by creating and removing one empty probe directory per
/// hierarchy. It changes nothing else (it never enables v2 controllers).
pub fn probe() -> CgroupSupport {
    probe_with(&hierarchy::discover(), try_mkdir)
}

/// Like [`probe`], but only checks that the parent cgroup directories are writable instead of
/// creating probe cgroups: the cheap check used on the hot path of starting a box, which then
/// fails closed if creating its cgroup fails after all.
pub fn probe_writable() -> CgroupSupport {
    hierarchy::discovery().probe_writable()
}

impl hierarchy::Discovery {
    /// [`probe_writable`] on what this discovery found.
    pub fn probe_writable(&self) -> CgroupSupport {
        probe_with(&self.0, check_writable)
    }
}

fn probe_with(
    found: &Result<hierarchy::Hierarchy, String>,
    test: fn(&std::path::Path) -> Result<(), String>,
) -> CgroupSupport {
    let hierarchy = match found {
        Ok(h) => h,
        Err(reason) => {
            return CgroupSupport {
                version: None,
                memory: false,
                pids: false,
                cpu: false,
                reason: Some(reason.clone()),
            }
        }
    };
    let mut tried: Vec<(PathBuf, Result<(), String>)> = Vec::new();
    let mut reasons = Vec::new();
    let mut usable = [false; 3];
    for (slot, controller) in usable.iter_mut().zip(Controller::ALL) {
        let outcome = match hierarchy.site(controller) {
            Err(reason) => Err(reason.clone()),
            Ok(site) => match tried.iter().find(|(p, _)| *p == site.parent) {
                Some((_, outcome)) => outcome.clone(),
                None => {
                    let outcome = test(&site.parent);
                    tried.push((site.parent.clone(), outcome.clone()));
                    outcome
                }
            },
        };
        match outcome {
            Ok(()) => *slot = true,
            Err(reason) => reasons.push(format!("{}: {reason}", controller.name())),
        }
    }
    CgroupSupport {
        version: Some(hierarchy.version),
        memory: usable[0],
        pids: usable[1],
        cpu: usable[2],
        reason: if reasons.is_empty() {
            None
        } else {
            Some(reasons.join("; "))
        },
    }
}

/// Creates and removes an empty child cgroup of `parent`.
fn check_writable(parent: &std::path::Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(parent.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte", parent.display()))?;
    // SAFETY: c is a valid C string; faccessat only reads it.
    let r = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    Err(format!(
        "cannot create a child cgroup in {} ({e}): {}",
        parent.display(),
        super::error::fix_hint(&e)
    ))
}

fn try_mkdir(parent: &std::path::Path) -> Result<(), String> {
    let n = PROBE_COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("airlock-probe-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| {
        format!(
            "cannot create a child cgroup in {} ({e}): {}",
            parent.display(),
            super::error::fix_hint(&e)
        )
    })?;
    std::fs::remove_dir(&dir).map_err(|e| {
        format!(
            "created but cannot remove probe cgroup {} ({e})",
            dir.display()
        )
    })
}
