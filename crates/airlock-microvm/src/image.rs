//! A template's root as a read-only erofs disk image, built once per template digest with
//! Debian's `mkfs.erofs` and cached; every box of the template attaches the same image
//! read-only.

use crate::MicrovmError;
use airlock_runtime::backend::ImageTemplate;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The filesystem the image is made as.
pub const FSTYPE: &str = "erofs";

/// The cached image of `template`, built if it is not there yet.
pub fn cached(cache: &Path, template: &ImageTemplate) -> Result<PathBuf, MicrovmError> {
    let digest: String = template
        .digest
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if digest.is_empty() {
        return Err(MicrovmError::Invalid(format!(
            "template {:?} has no digest to key its disk image by",
            template.name
        )));
    }
    // `u1000`: the files are the box user's (an image made before that was root's).
    let path = cache
        .join("templates")
        .join(format!("{digest}.u1000.erofs"));
    if path.is_file() {
        return Ok(path);
    }
    if !template.rootfs.is_dir() {
        return Err(MicrovmError::Invalid(format!(
            "template {:?}'s root {} is not a directory",
            template.name,
            template.rootfs.display()
        )));
    }
    let tmp = crate::cache::temp_beside(&path)?;
    // Files owned by the box user (uid 1000, as a native box on the template sees them: the
    // template's tree is the caller's, mapped to that user) with one fixed time: the image
    // depends only on the tree's content, and holds no set-ID-root file.
    let uid = format!("--force-uid={}", airlock_policy::INSIDE_UID);
    let gid = format!("--force-gid={}", airlock_policy::INSIDE_GID);
    let out = Command::new("mkfs.erofs")
        .args(["--quiet", &uid, &gid, "-T0"])
        .arg(&tmp)
        .arg(&template.rootfs)
        .output();
    match out {
        Ok(o) if o.status.success() => crate::cache::commit(&tmp, &path).map(|()| path),
        Ok(o) => {
            let _ = std::fs::remove_file(&tmp);
            Err(MicrovmError::Invalid(format!(
                "cannot make template {:?}'s disk image: mkfs.erofs said {}",
                template.name,
                String::from_utf8_lossy(&o.stderr).trim()
            )))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(MicrovmError::io(
                "cannot run mkfs.erofs (install Debian's erofs-utils)",
                e,
            ))
        }
    }
}
