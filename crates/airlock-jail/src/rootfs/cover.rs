//! Pins and covers: what keeps protected paths read-only and denied paths hidden. A native box
//! applies them inside itself after pivot_root ([`Finder::InBox`]); a backend whose root is
//! assembled by someone else (gVisor's gofer serves host directories to the Sentry) applies
//! the same ones beneath each host directory the box will see ([`protect_beneath`]), so the
//! host kernel holds them whatever the box's kernel does.

use super::build::{ctx, fd_path, mount, open_path};
use super::plan::{EMPTY_DIR, EMPTY_FILE};
use super::{Cover, RootfsError};
use crate::mount_attr::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where pins and covers are resolved, and what covers a hidden path.
pub(super) enum Finder<'a> {
    /// Inside the box, after pivot_root: paths are the box's own.
    InBox,
    /// Beneath a host directory (held open): paths are relative to it, and no symlink on the
    /// way resolves above it.
    Beneath {
        root: OwnedFd,
        empty_file: &'a Path,
        empty_dir: &'a Path,
    },
}

impl Finder<'_> {
    /// An `O_PATH` descriptor of `path`, a final symlink not followed.
    fn open(&self, path: &Path) -> io::Result<OwnedFd> {
        match self {
            Finder::InBox => {
                let fd = open_path(path, true)?;
                // SAFETY: a fresh descriptor from open, ours alone.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            }
            Finder::Beneath { root, .. } => open_beneath(root, path),
        }
    }

    fn empty(&self, dir: bool) -> &Path {
        match (self, dir) {
            (Finder::InBox, true) => Path::new(EMPTY_DIR),
            (Finder::InBox, false) => Path::new(EMPTY_FILE),
            (Finder::Beneath { empty_dir, .. }, true) => empty_dir,
            (Finder::Beneath { empty_file, .. }, false) => empty_file,
        }
    }
}

/// `path` under `root` as an `O_PATH` descriptor, resolved inside it (never out of it), the last
/// component not followed.
fn open_beneath(root: &OwnedFd, path: &Path) -> io::Result<OwnedFd> {
    crate::in_root::open(root, path, libc::O_PATH | libc::O_NOFOLLOW)
}

/// Makes the mount now at `path` (and every mount below it) read-only, nosuid and nodev,
/// finding it the way the cover was found.
fn seal(finder: &Finder, path: &Path) -> io::Result<()> {
    let fd = finder.open(path)?;
    crate::mount_attr::set(
        fd.as_raw_fd(),
        c"",
        libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        None,
    )
}

fn missing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR))
}

/// The kind of what `fd` is.
fn file_type(fd: &OwnedFd, path: &Path) -> Result<libc::mode_t, RootfsError> {
    // SAFETY: st is plain old data for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is a valid O_PATH descriptor and st a valid stat buffer.
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    if rc == -1 {
        return Err(ctx("stat", path)(io::Error::last_os_error()));
    }
    Ok(st.st_mode & libc::S_IFMT)
}

/// Pins one directory that holds protected paths: binds it onto itself (never following a final
/// symlink) so it cannot be renamed or removed. Anything else found there (a symlink, a
/// `gitdir:` file) is covered read-only instead, so the box cannot swap it either.
pub(super) fn pin_path(finder: &Finder, path: &Path) -> Result<(), RootfsError> {
    let fd = match finder.open(path) {
        Ok(fd) => fd,
        Err(e) if missing(&e) => return Ok(()),
        Err(e) => return Err(ctx("open", path)(e)),
    };
    if file_type(&fd, path)? == libc::S_IFDIR {
        let target = fd_path(fd.as_raw_fd());
        mount(
            Some(&target),
            &target,
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )
        .map_err(ctx("pin", path))
    } else {
        drop(fd);
        cover_path(
            finder,
            &Cover {
                path: path.to_path_buf(),
                keep_visible: true,
            },
        )
    }
}

/// Covers one protected or denied path, never following a final symlink: a symlink is itself
/// covered by an empty read-only file.
pub(super) fn cover_path(finder: &Finder, cover: &Cover) -> Result<(), RootfsError> {
    let path = &cover.path;
    let fd = match finder.open(path) {
        Ok(fd) => fd,
        // Missing: nothing to protect or hide (placeholders are made for protected paths
        // beforehand, so a protected path is only missing when its parent is not a dir).
        Err(e) if missing(&e) => return Ok(()),
        Err(e) => return Err(ctx("open", path)(e)),
    };
    let kind = file_type(&fd, path)?;
    let target = fd_path(fd.as_raw_fd());
    let source: PathBuf = if cover.keep_visible && kind != libc::S_IFLNK {
        target.clone()
    } else {
        finder.empty(kind == libc::S_IFDIR).to_path_buf()
    };
    mount(
        Some(&source),
        &target,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )
    .map_err(ctx("cover", path))?;
    drop(fd);
    seal(finder, path).map_err(ctx("cover read-only", path))
}

/// Applies `pins` then `covers` (paths relative to `root`) beneath the host directory `root`,
/// as a native box applies them inside itself: pinned directories cannot be renamed or removed,
/// covered paths are read-only (`keep_visible`) or hidden behind `empty_file` / `empty_dir`,
/// symlinks are covered themselves and never followed, and nothing resolves above `root`.
/// The mounts are made in the caller's mount namespace; call it in a private one.
pub fn protect_beneath(
    root: &Path,
    pins: &[PathBuf],
    covers: &[Cover],
    empty_file: &Path,
    empty_dir: &Path,
) -> Result<(), RootfsError> {
    let fd = open_path(root, false).map_err(ctx("open", root))?;
    let finder = Finder::Beneath {
        // SAFETY: a fresh descriptor from open, ours alone.
        root: unsafe { OwnedFd::from_raw_fd(fd) },
        empty_file,
        empty_dir,
    };
    let at = |p: &Path| root.join(p);
    for pin in pins {
        pin_path(&finder, pin).map_err(|e| RootfsError { path: at(pin), ..e })?;
    }
    for cover in covers {
        cover_path(&finder, cover).map_err(|e| RootfsError {
            path: at(&cover.path),
            ..e
        })?;
    }
    Ok(())
}
