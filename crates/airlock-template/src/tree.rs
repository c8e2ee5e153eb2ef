//! Writing entries into a staged root tree without ever leaving it.
//!
//! Every entry path is made relative and lexically checked (`..` refused), and every directory
//! on the way is checked to be a real directory (never a symlink) before the final component is
//! touched, which itself is never followed. So an archive's symlink — however it points — can
//! only ever be stored, never written through. Only this process writes the staging tree (its
//! parent is mode 0700), so nothing can swap a checked directory in between.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why an entry cannot be placed.
#[derive(Debug)]
pub(crate) enum PlaceError {
    /// The entry is hostile or malformed (the reason, as a sentence fragment).
    Refused(String),
    Io(io::Error),
}

impl From<io::Error> for PlaceError {
    fn from(e: io::Error) -> PlaceError {
        PlaceError::Io(e)
    }
}

/// An archive path made relative to the root: `None` for the root itself.
pub(crate) fn relative(raw: &[u8]) -> Result<Option<PathBuf>, PlaceError> {
    if raw.contains(&0) {
        return Err(PlaceError::Refused("its path holds a NUL byte".into()));
    }
    let mut out = PathBuf::new();
    for c in Path::new(OsStr::from_bytes(raw)).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                return Err(PlaceError::Refused(
                    "its path climbs out of the image with `..`".into(),
                ))
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => return Err(PlaceError::Refused("bad path".into())),
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// The staged tree.
pub(crate) struct Tree {
    root: PathBuf,
}

impl Tree {
    pub(crate) fn new(root: PathBuf) -> Tree {
        Tree { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The host path of `rel`'s parent, checked to be a chain of real directories inside the
    /// root (missing ones are made when `create`), and the host path of `rel` itself.
    pub(crate) fn locate(&self, rel: &Path, create: bool) -> Result<PathBuf, PlaceError> {
        let mut at = self.root.clone();
        let parent = rel.parent().unwrap_or(Path::new(""));
        for c in parent.components() {
            at.push(c);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(PlaceError::Refused(format!(
                        "it would be written through the symlink {}",
                        at.strip_prefix(&self.root).unwrap_or(&at).display()
                    )))
                }
                Ok(_) => {
                    return Err(PlaceError::Refused(format!(
                        "{} is not a directory",
                        at.strip_prefix(&self.root).unwrap_or(&at).display()
                    )))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&at)?;
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755))?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.root.join(rel))
    }

    /// Removes whatever is at `path` (never following it). Missing is fine.
    pub(crate) fn clear(path: &Path) -> io::Result<()> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                open_up(path);
                std::fs::remove_dir_all(path)
            }
            Ok(_) => std::fs::remove_file(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Makes every directory under `dir` writable and searchable by us, so it can be removed.
pub(crate) fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&e.path());
            }
        }
    }
}
