//! Protected paths under gVisor, held by the host kernel: the native box's pins and covers
//! ([`RootfsPlan`]'s selection) made beneath each grant's view in the host process's private
//! mount namespace, before runsc starts. runsc's gofer binds the views recursively, so it
//! serves the box files through those mounts: a write to a covered path fails with EROFS and
//! a rename or removal of one with EBUSY in the host kernel, whatever the Sentry does. Protected
//! paths that do not exist yet get the native box's empty placeholders first (covered like the
//! rest, so the box cannot create them), removed when the box ends (or by the cleanup sentinel
//! if this process is killed).
//!
//! [`RootfsPlan`]: airlock_jail::rootfs::RootfsPlan

use airlock_jail::rootfs::{Cover, RootfsError};
use airlock_native::{Placeholder, Sentinel};
use airlock_policy::ResolvedPolicy;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What the host kernel holds beneath one grant's view, relative to the view.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewProtection {
    pub view: PathBuf,
    pub pins: Vec<PathBuf>,
    pub covers: Vec<Cover>,
}

/// Why the protected paths could not be held.
#[derive(Debug, thiserror::Error)]
pub enum ProtectError {
    #[error("cannot make placeholders for the protected paths that do not exist yet: {0}")]
    Placeholders(#[source] std::io::Error),
    #[error("cannot cover a protected path on the host: {0}")]
    Cover(#[from] RootfsError),
}

/// The placeholders of one box and the views its covers are on; dropping it detaches the views
/// (and the covers on them) and removes the placeholders still empty.
pub struct HostProtection {
    made: Vec<Placeholder>,
    views: Vec<PathBuf>,
}

impl HostProtection {
    /// Makes the placeholders `policy` needs and registers them with `sentinel`. Returns the
    /// inside paths to cover beyond the plan's (a placeholder's first missing component).
    pub fn placeholders(
        policy: &ResolvedPolicy,
        sentinel: &Sentinel,
    ) -> Result<(HostProtection, Vec<PathBuf>), ProtectError> {
        let (made, extra) =
            airlock_native::create_placeholders(policy).map_err(ProtectError::Placeholders)?;
        sentinel.register_placeholders(&made);
        let protection = HostProtection {
            made,
            views: Vec::new(),
        };
        Ok((protection, extra))
    }

    /// Pins and covers each view's protected paths. Call in the private mount namespace, once
    /// the views are attached and before runsc starts.
    pub fn apply(
        &mut self,
        views: &[ViewProtection],
        empty_file: &Path,
        empty_dir: &Path,
    ) -> Result<(), ProtectError> {
        for v in views {
            self.views.push(v.view.clone());
            airlock_jail::rootfs::protect_beneath(
                &v.view, &v.pins, &v.covers, empty_file, empty_dir,
            )?;
        }
        Ok(())
    }
}

impl Drop for HostProtection {
    fn drop(&mut self) {
        // A placeholder under a cover is a mount point in this namespace: unlinking it would
        // fail (EBUSY) while the covers are there.
        for view in &self.views {
            if let Ok(p) = CString::new(view.as_os_str().as_bytes()) {
                // SAFETY: a valid C string; detaching a mount this process made.
                unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) };
            }
        }
        airlock_native::remove_placeholders(&self.made);
    }
}
