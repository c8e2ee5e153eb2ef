//! Where the guest's pieces are: the kernel and its modules (extracted from Debian's kernel
//! package by `scripts/microvm-guest.sh`, never installed on the host), and the static
//! `airlock-vm-init` and `airlock-agent` the initramfs is made of.

use crate::MicrovmError;
use std::path::{Path, PathBuf};

/// The kernel modules the guest loads, in dependency order (virtio transport and console, the
/// block device, 9p over virtio, erofs with its checksum, overlayfs).
pub const MODULES: &[&str] = &[
    "virtio_ring",
    "virtio",
    "virtio_mmio",
    "virtio_console",
    "virtio_blk",
    "netfs",
    "fscache",
    "9pnet",
    "9pnet_virtio",
    "9p",
    "crc32c_generic",
    "libcrc32c",
    "erofs",
    "overlay",
];

/// The guest's files, all found.
#[derive(Debug, Clone)]
pub struct GuestFiles {
    pub kernel: PathBuf,
    /// `lib/modules/<version>` of the extracted package.
    pub modules: PathBuf,
    pub init: PathBuf,
    pub agent: PathBuf,
    /// Where built images (initramfs, template disks, snapshots) are cached.
    pub cache: PathBuf,
}

impl GuestFiles {
    /// Looks under `dir` (`target/microvm`): `kernel/boot/vmlinuz-*`, `kernel/lib/modules/*`,
    /// `guest/airlock-vm-init`, `guest/airlock-agent`.
    pub fn find(dir: &Path) -> Result<GuestFiles, MicrovmError> {
        let missing = |what: &str| MicrovmError::GuestMissing {
            what: what.to_string(),
            dir: dir.to_path_buf(),
        };
        let first = |sub: &Path, prefix: &str| -> Option<PathBuf> {
            let mut names: Vec<PathBuf> = std::fs::read_dir(sub)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
                })
                .collect();
            names.sort();
            names.pop()
        };
        let kernel = first(&dir.join("kernel/boot"), "vmlinuz-")
            .ok_or_else(|| missing("the guest kernel (kernel/boot/vmlinuz-*)"))?;
        let modules = first(&dir.join("kernel/lib/modules"), "")
            .ok_or_else(|| missing("the guest kernel's modules (kernel/lib/modules/*)"))?;
        let init = dir.join("guest/airlock-vm-init");
        let agent = dir.join("guest/airlock-agent");
        for (path, what) in [(&init, "the guest init"), (&agent, "the static agent")] {
            if !path.is_file() {
                return Err(missing(what));
            }
        }
        Ok(GuestFiles {
            kernel,
            modules,
            init,
            agent,
            cache: cache_dir(dir),
        })
    }

    /// The module files in load order.
    pub fn module_files(&self) -> Result<Vec<(String, PathBuf)>, MicrovmError> {
        let mut found = Vec::new();
        for name in MODULES {
            let file = format!("{name}.ko");
            let path = find_file(&self.modules.join("kernel"), &file).ok_or_else(|| {
                MicrovmError::GuestMissing {
                    what: format!("the kernel module {file}"),
                    dir: self.modules.clone(),
                }
            })?;
            found.push((file, path));
        }
        Ok(found)
    }
}

/// Where built pieces are cached: `AIRLOCK_MICROVM_CACHE`, else `dir/cache` when this user can
/// write there, else the user's own cache directory (an unprivileged airlock beside a root-owned
/// build).
fn cache_dir(dir: &Path) -> PathBuf {
    if let Some(c) = std::env::var_os("AIRLOCK_MICROVM_CACHE") {
        return PathBuf::from(c);
    }
    let own = dir.join("cache");
    let writable = |p: &Path| {
        std::fs::create_dir_all(p).is_ok()
            && std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
                // SAFETY: a valid NUL-terminated path.
                .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
    };
    if writable(&own) {
        return own;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("airlock").join("microvm")
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let kind = entry.file_type().ok()?;
        if kind.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if entry.file_name() == name {
            return Some(path);
        }
    }
    None
}
