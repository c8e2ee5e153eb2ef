//! Where a gVisor box's host-side files live: a tmpfs mounted in the host process's own private
//! mount namespace. It holds the OCI bundle, runsc's state, the box's size-capped scratch
//! (`/tmp`, home, `/dev/shm`, an image's writable layer) and the idmapped views of the grants;
//! none of it is visible to the rest of the host, and the kernel frees all of it when the last
//! process in that namespace (the host process, runsc, its gofer and sandbox) is gone, whether
//! they ended or were killed.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The mount point (an empty directory on the host, shared by every box; each box mounts its
/// own tmpfs there in its own mount namespace).
const BASE: &str = "/run/airlock-gvisor";
/// Size cap of the bundle tmpfs (config, root skeleton, runsc state, logs).
const BASE_SIZE: u64 = 16 << 20;

/// The paths of one box's host side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub base: PathBuf,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    /// runsc's `--root`.
    pub state: PathBuf,
    pub scratch: PathBuf,
    pub views: PathBuf,
    pub empty_file: PathBuf,
    /// An empty read-only directory (what hides a denied directory).
    pub empty_dir: PathBuf,
    /// The statx compatibility shim commands preload.
    pub statx_compat: PathBuf,
    /// The xattr compatibility shim commands preload.
    pub xattr_compat: PathBuf,
    /// runsc's own messages (why a start failed).
    pub log: PathBuf,
}

/// Why the box's host-side files could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("cannot make a private mount namespace for the box's bundle (the gvisor backend needs root): {0}")]
    Namespace(io::Error),
    #[error("cannot mount {what} at {path}: {err}")]
    Mount {
        what: &'static str,
        path: PathBuf,
        err: io::Error,
    },
    #[error("cannot prepare {path}: {err}")]
    Prepare { path: PathBuf, err: io::Error },
}

fn cstr(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other)
}

fn mount(
    source: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> io::Result<()> {
    let (s, t, f, d) = (
        std::ffi::CString::new(source).map_err(io::Error::other)?,
        cstr(target)?,
        std::ffi::CString::new(fstype).map_err(io::Error::other)?,
        std::ffi::CString::new(data).map_err(io::Error::other)?,
    );
    // SAFETY: four valid C strings; mount copies them.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Layout {
    /// The paths (the same for every box: each sees its own tmpfs there).
    pub fn fixed() -> Layout {
        let base = PathBuf::from(BASE);
        Layout {
            bundle: base.join("bundle"),
            rootfs: base.join("bundle/rootfs"),
            state: base.join("runsc"),
            scratch: base.join("scratch"),
            views: base.join("views"),
            empty_file: base.join("empty"),
            empty_dir: base.join("empty.d"),
            statx_compat: base.join("statx-compat.so"),
            xattr_compat: base.join("xattr-compat.so"),
            log: base.join("runsc.log"),
            base,
        }
    }

    /// Moves this process into a private mount namespace and mounts the box's tmpfs there:
    /// the scratch capped at `disk` bytes and, for an image, its root read-only under a
    /// writable layer on the scratch; the scratch starts as a copy of `seed` when given (a
    /// checkpoint's files). Call once, single-threaded.
    ///
    /// The image's tree (owned by whoever stored it, root) is the lower layer through an
    /// idmapped view that shows its owner's files as the box user's, as a native box sees its
    /// template: the box's root (the box user by another name) can then change the template's
    /// system files in its own layer (`apt-get install`). Where this host cannot idmap, the
    /// tree is the lower layer as it is, and the returned reason says so.
    pub fn enter(
        &self,
        disk: u64,
        image_root: Option<&Path>,
        seed: Option<&Path>,
    ) -> Result<Option<String>, LayoutError> {
        // SAFETY: unshare with a flag; this process is single-threaded here.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } == -1 {
            return Err(LayoutError::Namespace(io::Error::last_os_error()));
        }
        mount(
            "none",
            Path::new("/"),
            "",
            libc::MS_REC | libc::MS_PRIVATE,
            "",
        )
        .map_err(LayoutError::Namespace)?;
        let prepare = |path: &Path, r: io::Result<()>| {
            r.map_err(|err| LayoutError::Prepare {
                path: path.to_path_buf(),
                err,
            })
        };
        prepare(&self.base, std::fs::create_dir_all(&self.base))?;
        let tmpfs = |path: &Path, size: u64, what| {
            mount(
                "tmpfs",
                path,
                "tmpfs",
                libc::MS_NOSUID | libc::MS_NODEV,
                &format!("size={size},mode=0755"),
            )
            .map_err(|err| LayoutError::Mount {
                what,
                path: path.to_path_buf(),
                err,
            })
        };
        tmpfs(&self.base, BASE_SIZE, "the bundle tmpfs")?;
        for dir in [
            &self.bundle,
            &self.rootfs,
            &self.state,
            &self.scratch,
            &self.views,
        ] {
            prepare(dir, std::fs::create_dir_all(dir))?;
        }
        prepare(&self.empty_file, std::fs::write(&self.empty_file, b""))?;
        prepare(&self.empty_dir, std::fs::create_dir_all(&self.empty_dir))?;
        prepare(
            &self.statx_compat,
            std::fs::write(&self.statx_compat, crate::compat::STATX_COMPAT),
        )?;
        prepare(
            &self.xattr_compat,
            std::fs::write(&self.xattr_compat, crate::compat::XATTR_COMPAT),
        )?;
        prepare(
            &self.empty_dir,
            std::fs::set_permissions(
                &self.empty_dir,
                std::os::unix::fs::PermissionsExt::from_mode(0o555),
            ),
        )?;
        tmpfs(
            &self.scratch,
            disk.max(1 << 20),
            "the scratch tmpfs (--disk)",
        )?;
        if let Some(seed) = seed {
            crate::checkpoint::copy_tree(seed, &self.scratch).map_err(|e| {
                LayoutError::Prepare {
                    path: self.scratch.clone(),
                    err: io::Error::other(e),
                }
            })?;
        }
        let mut gap = None;
        if let Some(image) = image_root {
            let view = self.views.join(".image");
            prepare(&view, std::fs::create_dir_all(&view))?;
            let lower = match image_view(image, &view) {
                Ok(()) => view,
                Err(e) => {
                    gap = Some(format!(
                        "the image's files stay its owner's, not the box user's (idmapped mounts are unavailable here: {e})"
                    ));
                    image.to_path_buf()
                }
            };
            let (upper, work) = (
                self.scratch.join(".root/upper"),
                self.scratch.join(".root/work"),
            );
            for d in [&upper, &work] {
                prepare(d, std::fs::create_dir_all(d))?;
            }
            if gap.is_none() {
                // The layer's own root is the box's `/` (overlayfs takes the root's owner from
                // the upper layer): the box user's, as the image's files now show.
                prepare(
                    &upper,
                    std::os::unix::fs::chown(
                        &upper,
                        Some(airlock_policy::INSIDE_UID),
                        Some(airlock_policy::INSIDE_GID),
                    ),
                )?;
            }
            let data = format!(
                "lowerdir={},upperdir={},workdir={}",
                lower.display(),
                upper.display(),
                work.display()
            );
            mount(
                "overlay",
                &self.rootfs,
                "overlay",
                libc::MS_NOSUID | libc::MS_NODEV,
                &data,
            )
            .map_err(|err| LayoutError::Mount {
                what: "the image's writable layer",
                path: self.rootfs.clone(),
                err,
            })?;
        }
        Ok(gap)
    }
}

/// Attaches `image` at `view`, read-only, its owner's files (and what they store) shown as the
/// box user's.
fn image_view(image: &Path, view: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(image)?.uid();
    let ns = airlock_jail::idmap::IdmapNamespace::mapping(&[(owner, airlock_policy::INSIDE_UID)])?;
    let tree = airlock_jail::idmap::idmapped_tree(image, &ns, true)?;
    airlock_jail::idmap::attach(tree.as_raw_fd(), view)
}
