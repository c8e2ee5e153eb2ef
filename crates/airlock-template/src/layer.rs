//! Applying one image layer (a tar stream, already decompressed) to the staged tree, with the
//! OCI whiteouts: `.wh.NAME` removes NAME of the layers below, `.wh..wh..opq` hides everything
//! the layers below put in its directory.
//!
//! Hostile entries are refused (paths climbing out with `..`, writes through a symlink, hard
//! links to what is not in the image) or made harmless (set-ID bits cleared, device nodes
//! dropped, symlinks stored but never followed).

use crate::error::TemplateError;
use crate::import::ImportReport;
use crate::tree::{relative, PlaceError, Tree};
use std::collections::{BTreeMap, HashSet};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use tar::EntryType;

const WHITEOUT: &[u8] = b".wh.";
const OPAQUE: &[u8] = b".wh..wh..opq";

/// Directory modes to set once every layer is in (a read-only directory would stop later
/// layers from writing into it), by path relative to the root (empty: the root).
pub(crate) type DirModes = BTreeMap<PathBuf, u32>;

/// Applies layer number `index` (from 1) read from `reader`.
pub(crate) fn apply(
    tree: &Tree,
    index: usize,
    reader: impl Read,
    report: &mut ImportReport,
    dir_modes: &mut DirModes,
) -> Result<(), TemplateError> {
    let mut archive = tar::Archive::new(reader);
    let mut created: HashSet<PathBuf> = HashSet::new();
    let entries = archive.entries().map_err(|e| bad(index, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(index, e))?;
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let hostile = |why: String| TemplateError::Hostile {
            layer: index,
            entry: shown.clone(),
            why,
        };
        let placed = place(tree, &mut entry, &raw, &mut created, report, dir_modes);
        match placed {
            Ok(()) => report.entries += 1,
            Err(PlaceError::Refused(why)) => return Err(hostile(why)),
            Err(PlaceError::Io(e)) => return Err(bad(index, e)),
        }
    }
    Ok(())
}

fn bad(index: usize, e: io::Error) -> TemplateError {
    TemplateError::Malformed(format!(
        "layer {index} cannot be read as a tar archive: {e}"
    ))
}

fn place<R: Read>(
    tree: &Tree,
    entry: &mut tar::Entry<'_, R>,
    raw: &[u8],
    created: &mut HashSet<PathBuf>,
    report: &mut ImportReport,
    dir_modes: &mut DirModes,
) -> Result<(), PlaceError> {
    let kind = entry.header().entry_type();
    let mode = entry.header().mode().map_err(PlaceError::Io)?;
    let Some(rel) = relative(raw)? else {
        return match kind {
            EntryType::Directory => {
                dir_modes.insert(PathBuf::new(), dir_mode(mode, report));
                Ok(())
            }
            _ => Err(PlaceError::Refused(
                "it would replace the image's root directory".into(),
            )),
        };
    };
    let name = rel.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    if name == OPAQUE {
        let dir = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let host = tree.locate(&dir.join("x"), true)?;
        let host_dir = host.parent().unwrap_or(tree.root()).to_path_buf();
        mark_created(created, &dir);
        return prune(&host_dir, &dir, created).map_err(PlaceError::Io);
    }
    if let Some(hidden) = name.strip_prefix(WHITEOUT) {
        let target = rel.with_file_name(std::ffi::OsStr::from_bytes(hidden));
        return match tree.locate(&target, false) {
            Ok(host) => Tree::clear(&host).map_err(PlaceError::Io),
            // Its directory is not in the image: nothing to hide.
            Err(PlaceError::Io(e)) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
    }
    let host = tree.locate(&rel, true)?;
    match kind {
        EntryType::Directory => {
            match std::fs::symlink_metadata(&host) {
                Ok(m) if m.is_dir() => {}
                _ => {
                    Tree::clear(&host)?;
                    std::fs::create_dir(&host)?;
                }
            }
            dir_modes.insert(rel.clone(), dir_mode(mode, report));
        }
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
            Tree::clear(&host)?;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&host)?;
            report.bytes += io::copy(entry, &mut f)?;
            drop(f);
            set_mode(&host, file_mode(mode, report))?;
        }
        EntryType::Symlink => {
            let target = entry
                .link_name_bytes()
                .ok_or_else(|| PlaceError::Refused("a symlink without a target".into()))?;
            if target.is_empty() || target.contains(&0) {
                return Err(PlaceError::Refused("a symlink with an empty target".into()));
            }
            Tree::clear(&host)?;
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &host)?;
        }
        EntryType::Link => {
            let target = entry
                .link_name_bytes()
                .ok_or_else(|| PlaceError::Refused("a hard link without a target".into()))?;
            let Some(target_rel) = relative(&target)? else {
                return Err(PlaceError::Refused("a hard link to the root".into()));
            };
            let shown = target_rel.display().to_string();
            let target_host = tree.locate(&target_rel, false).map_err(|e| match e {
                PlaceError::Io(_) => PlaceError::Refused(format!(
                    "a hard link to {shown}, which is not in the image"
                )),
                refused => refused,
            })?;
            match std::fs::symlink_metadata(&target_host) {
                Ok(m) if !m.is_dir() => {}
                Ok(_) => {
                    return Err(PlaceError::Refused(format!(
                        "a hard link to the directory {shown}"
                    )))
                }
                Err(_) => {
                    return Err(PlaceError::Refused(format!(
                        "a hard link to {shown}, which is not in the image"
                    )))
                }
            }
            if target_host != host {
                Tree::clear(&host)?;
                std::fs::hard_link(&target_host, &host)?;
            }
        }
        EntryType::Fifo => {
            Tree::clear(&host)?;
            let c = std::ffi::CString::new(host.as_os_str().as_bytes())
                .map_err(|_| PlaceError::Refused("its path holds a NUL byte".into()))?;
            // SAFETY: c is a valid NUL-terminated path.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                return Err(io::Error::last_os_error().into());
            }
            set_mode(&host, file_mode(mode, report))?;
        }
        EntryType::Char | EntryType::Block => {
            // Made harmless: a box never gets a device node from an image.
            report
                .dropped
                .push(format!("{} (device node)", rel.display()));
            return Ok(());
        }
        other => {
            return Err(PlaceError::Refused(format!(
                "unsupported tar entry type {other:?}"
            )))
        }
    }
    mark_created(created, &rel);
    Ok(())
}

/// Records `rel` and its parents as made by the current layer (an opaque marker later in the
/// same layer keeps them).
fn mark_created(created: &mut HashSet<PathBuf>, rel: &Path) {
    let mut p = Some(rel);
    while let Some(at) = p.filter(|p| !p.as_os_str().is_empty()) {
        if !created.insert(at.to_path_buf()) {
            break;
        }
        p = at.parent();
    }
}

/// Removes from `host_dir` (at `rel_dir`) everything the current layer did not make.
fn prune(host_dir: &Path, rel_dir: &Path, created: &HashSet<PathBuf>) -> io::Result<()> {
    for e in std::fs::read_dir(host_dir)? {
        let e = e?;
        let rel = rel_dir.join(e.file_name());
        let path = e.path();
        if !created.contains(&rel) {
            Tree::clear(&path)?;
        } else if e.file_type()?.is_dir() {
            prune(&path, &rel, created)?;
        }
    }
    Ok(())
}

fn dir_mode(mode: u32, report: &mut ImportReport) -> u32 {
    if mode & 0o6000 != 0 {
        report.setid_cleared += 1;
    }
    (mode & 0o1777) | 0o500
}

fn file_mode(mode: u32, report: &mut ImportReport) -> u32 {
    if mode & 0o6000 != 0 {
        report.setid_cleared += 1;
    }
    (mode & 0o777) | 0o400
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Sets the directory modes the layers asked for, deepest first.
pub(crate) fn finish_dirs(tree: &Tree, dir_modes: &DirModes) -> io::Result<()> {
    for (rel, mode) in dir_modes.iter().rev() {
        let path = tree.root().join(rel);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => set_mode(&path, *mode)?,
            _ => {}
        }
    }
    Ok(())
}
