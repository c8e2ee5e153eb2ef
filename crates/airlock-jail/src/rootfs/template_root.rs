//! The root of a box on a template: the template's tree read-only below, the box's own
//! writable layer (on its scratch tmpfs, so inside its disk cap) above, joined by overlayfs.
//! Runs in the box's first process, like the rest of the build.
//!
//! A template's content is untrusted (an imported image): before airlock creates a mount point
//! or writes a file into it, [`make_real_path`] makes sure nothing on the way is a symlink, so
//! no step of the setup can be redirected out of the root (before pivot_root, an absolute
//! symlink would resolve on the host).

use super::build::{ctx, fd_path, mkdir_all, mount, set_attr};
use super::{FsOp, NodeKind, RootfsError, RootfsPlan};
use crate::mount_attr::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A template's tree as the lower layer of the root.
pub(super) enum Lower {
    /// A descriptor of the host directory (O_PATH).
    Opened(libc::c_int),
    /// A premade idmapped mount of it (root-started boxes).
    Premade(libc::c_int),
}

/// Mounts the box's scratch tmpfs on /tmp of its private namespace, with the template (bound
/// read-only), the root's writable layer and the overlay of the two, which becomes the root.
/// Returns (root, scratch).
/// `kept_layer`, when given (an O_PATH descriptor of a host directory), holds the root's
/// writable layer instead of the scratch tmpfs, so it outlives the box (template builds).
pub(super) fn template_root(
    plan: &RootfsPlan,
    lower: Lower,
    kept_layer: Option<libc::c_int>,
) -> Result<(PathBuf, PathBuf), RootfsError> {
    let scratch = PathBuf::from("/tmp");
    super::build::mount_scratch(plan, &scratch)?;
    let layer = match kept_layer {
        None => scratch.clone(),
        Some(fd) => {
            let at = scratch.join(".root-layer");
            let res = mkdir_all(&at, 0o700)
                .map_err(ctx("mkdir", &at))
                .and_then(|()| {
                    mount(Some(&fd_path(fd)), &at, None, libc::MS_BIND, None)
                        .map_err(ctx("bind the kept layer", &at))
                });
            crate::sys::close(fd);
            res?;
            at
        }
    };
    let (tree, upper, work, root) = (
        scratch.join(".template"),
        layer.join(".root-upper"),
        layer.join(".root-work"),
        scratch.join(".root"),
    );
    for d in [&tree, &upper, &work, &root] {
        mkdir_all(d, 0o755).map_err(ctx("mkdir", d))?;
    }
    let attached = match lower {
        Lower::Premade(fd) => {
            let res = crate::idmap::attach(fd, &tree).map_err(ctx("attach template", &tree));
            crate::sys::close(fd);
            res
        }
        Lower::Opened(fd) => {
            let res = mount(
                Some(&fd_path(fd)),
                &tree,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            )
            .map_err(ctx("bind template", &tree));
            crate::sys::close(fd);
            res
        }
    };
    attached?;
    set_attr(
        &tree,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        true,
    )
    .map_err(ctx("read-only template", &tree))?;
    // The merged root shows the upper directory's mode: keep the template's own.
    let mode = std::fs::metadata(&tree)
        .map_err(ctx("stat template", &tree))?
        .permissions()
        .mode();
    std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(mode & 0o1777))
        .map_err(ctx("chmod", &upper))?;
    let opts = format!(
        "lowerdir={},upperdir={},workdir={},userxattr,metacopy=off,index=off,xino=off",
        tree.display(),
        upper.display(),
        work.display()
    );
    mount(
        Some(Path::new("airlock-template")),
        &root,
        Some("overlay"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&opts),
    )
    .map_err(ctx("mount the template root (overlayfs)", &root))?;
    Ok((root, scratch))
}

/// What an op needs at its target.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Dir,
    File,
    Nothing,
}

/// Directories [`make_real_path`] has already found (or made) real on the root's own layer
/// while one root is built, so that each op does not inspect the root and every parent again
/// (three or four `statx` through overlayfs per op otherwise, a fifth of the build).
///
/// Sound because only the build changes the root before the box runs: an op mounts at its own
/// target only (its parents stay what they were), and what the build replaces or mounts on is
/// forgotten ([`RealPaths::forget`]). The target itself is always inspected afresh.
#[derive(Default)]
pub(super) struct RealPaths {
    root_dev: Option<u64>,
    dirs: std::collections::HashSet<PathBuf>,
}

impl RealPaths {
    /// Forgets `path` and everything below it: an op mounted there, or it was replaced.
    pub(super) fn forget(&mut self, path: &Path) {
        self.dirs.retain(|d| !d.starts_with(path));
    }
}

/// Makes every directory on the way to the op's target a real directory and the target itself
/// what the op needs, removing symlinks or anything else found there (in the box's own layer
/// only: the template is untouched).
pub(super) fn make_real_path(
    root: &Path,
    op: &FsOp,
    known: &mut RealPaths,
) -> Result<(), RootfsError> {
    let (target, want) = match op {
        FsOp::Bind { target, kind, .. } => (
            target,
            match kind {
                NodeKind::Dir => Want::Dir,
                NodeKind::File => Want::File,
            },
        ),
        FsOp::Copy { target, .. } | FsOp::File { target, .. } | FsOp::ExtendFile { target, .. } => {
            (target, Want::File)
        }
        FsOp::Symlink { link, .. } => (link, Want::Nothing),
        FsOp::Absent { target } => (target, Want::Nothing),
        FsOp::Dir { target, .. }
        | FsOp::Tmpfs { target, .. }
        | FsOp::Scratch { target, .. }
        | FsOp::Proc { target }
        | FsOp::Devpts { target } => (target, Want::Dir),
        FsOp::Overlay { .. } => return Ok(()),
    };
    let rel = target.strip_prefix("/").unwrap_or(target);
    let count = rel.components().count();
    // The overlay's own directories carry its device number; anything else on the way is
    // another mount (the workspace, a grant, a scratch view, /dev): not the template's content,
    // and never touched here.
    let root_dev = match known.root_dev {
        Some(dev) => dev,
        None => {
            let dev = std::fs::symlink_metadata(root)
                .map_err(ctx("inspect", root))?
                .dev();
            known.root_dev = Some(dev);
            dev
        }
    };
    let mut at = root.to_path_buf();
    for (i, part) in rel.components().enumerate() {
        at.push(part);
        let last = i + 1 == count;
        if !last && known.dirs.contains(&at) {
            continue;
        }
        let want = if last { want } else { Want::Dir };
        let found = match std::fs::symlink_metadata(&at) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(ctx("inspect", &at)(e)),
        };
        if found
            .as_ref()
            .is_some_and(|m| m.is_dir() && m.dev() != root_dev)
        {
            return Ok(());
        }
        let fits = match (&found, want) {
            (Some(m), Want::Dir) => m.is_dir(),
            (Some(m), Want::File) => m.file_type().is_file(),
            (Some(_), Want::Nothing) => false,
            (None, _) => true,
        };
        if let (false, Some(m)) = (fits, &found) {
            // remove_dir_all never follows a symlink, and `at`'s parents are real dirs.
            known.forget(&at);
            if m.is_dir() {
                std::fs::remove_dir_all(&at).map_err(ctx("replace", &at))?;
            } else {
                std::fs::remove_file(&at).map_err(ctx("replace", &at))?;
            }
        }
        if want == Want::Dir {
            if !(fits && found.is_some()) {
                mkdir_all(&at, 0o755).map_err(ctx("mkdir", &at))?;
            }
            known.dirs.insert(at.clone());
        }
    }
    Ok(())
}
