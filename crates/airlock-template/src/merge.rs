//! Folding a build box's kept root layer (an overlayfs upper directory) into the tree being
//! built: files, directories and links copied in, whiteouts (0:0 character devices) removing
//! what they hide, opaque directories (`user.overlay.opaque`) replacing what was below. What
//! airlock itself put in the layer while setting up the box (its identity files, placeholders,
//! mount points) is left out. Never follows a symlink on either side.

use crate::import::ImportReport;
use crate::tree::{PlaceError, Tree};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Paths (relative to the root) the box's setup writes, never part of a build's result.
const SETUP_PATHS: &[&str] = &[
    "etc/passwd",
    "etc/group",
    "etc/hosts",
    "etc/hostname",
    ".airlock",
    "dev",
    "proc",
    "tmp",
    "home/user",
];

/// Merges `upper` into `tree`.
pub(crate) fn merge_upper(
    upper: &Path,
    tree: &Tree,
    report: &mut ImportReport,
) -> Result<(), PlaceError> {
    walk(upper, Path::new(""), tree, report)
}

fn walk(dir: &Path, rel: &Path, tree: &Tree, report: &mut ImportReport) -> Result<(), PlaceError> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        if SETUP_PATHS.iter().any(|p| Path::new(p) == rel) {
            continue;
        }
        let src = dir.join(&name);
        let meta = std::fs::symlink_metadata(&src)?;
        let ft = meta.file_type();
        let dest = tree.locate(&rel, true)?;
        if ft.is_char_device() && meta.rdev() == 0 {
            Tree::clear(&dest)?;
            continue;
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o6000 != 0 {
            report.setid_cleared += 1;
        }
        if ft.is_dir() {
            let opaque = is_opaque(&src);
            let keep = !opaque && std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_dir());
            if !keep {
                Tree::clear(&dest)?;
                std::fs::create_dir(&dest)?;
            }
            walk(&src, &rel, tree, report)?;
            std::fs::set_permissions(
                &dest,
                std::fs::Permissions::from_mode((mode & 0o1777) | 0o500),
            )?;
        } else if ft.is_file() {
            Tree::clear(&dest)?;
            report.bytes += std::fs::copy(&src, &dest)?;
            std::fs::set_permissions(
                &dest,
                std::fs::Permissions::from_mode((mode & 0o777) | 0o400),
            )?;
        } else if ft.is_symlink() {
            Tree::clear(&dest)?;
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dest)?;
        } else {
            report
                .dropped
                .push(format!("{} (not a file, directory or link)", rel.display()));
            continue;
        }
        report.entries += 1;
    }
    Ok(())
}

fn is_opaque(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    ["user.overlay.opaque", "trusted.overlay.opaque"]
        .iter()
        .any(|attr| {
            let Ok(name) = CString::new(*attr) else {
                return false;
            };
            let mut buf = [0u8; 4];
            // SAFETY: valid NUL-terminated strings and a buffer of the length given.
            let n = unsafe {
                libc::lgetxattr(
                    path.as_ptr(),
                    name.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            n >= 1 && buf[0] == b'y'
        })
}

impl From<PlaceError> for io::Error {
    fn from(e: PlaceError) -> io::Error {
        match e {
            PlaceError::Io(e) => e,
            PlaceError::Refused(why) => io::Error::other(why),
        }
    }
}
