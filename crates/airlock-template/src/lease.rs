//! A running box's hold on its template: a shared `flock` on the template's root directory,
//! kept for as long as the box lives. [`crate::TemplateStore::remove`] takes the exclusive lock
//! without waiting, so it refuses a template that any box still holds.

use crate::error::{io_err, TemplateError};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// Held while a box runs on a template; dropping it releases the hold.
#[derive(Debug)]
pub struct TemplateLease {
    _dir: OwnedFd,
}

/// Takes a shared hold on the template whose root is `rootfs`. Fails when the template is being
/// removed right now.
pub fn hold(rootfs: &Path) -> Result<TemplateLease, TemplateError> {
    let dir = open_dir(rootfs)?;
    match flock(&dir, libc::LOCK_SH | libc::LOCK_NB) {
        Ok(()) => Ok(TemplateLease { _dir: dir }),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Err(TemplateError::Io {
            what: "hold the template (it is being removed)",
            path: rootfs.to_path_buf(),
            source: e,
        }),
        Err(e) => Err(io_err("lock", rootfs)(e)),
    }
}

pub(crate) fn open_dir(path: &Path) -> Result<OwnedFd, TemplateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_err("open", path))?;
    Ok(f.into())
}

pub(crate) fn flock(fd: &OwnedFd, op: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock only acts on a descriptor we own.
    if unsafe { libc::flock(fd.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
