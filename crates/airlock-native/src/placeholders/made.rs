//! An entry airlock made on the host, and its removal without resolving a path again.
//!
//! A box whose writable grant contains another box's workspace can rename, delete or replace
//! anything there while that box runs, e.g. swap the `.git` directory holding a placeholder for a
//! symlink to a directory outside every grant. Removing `<workspace>/.git/config` by path would
//! then delete a file outside. So an entry keeps the directory it was made in open, and removal
//! looks its name up in that directory only (never following a symlink), checks it is still what
//! airlock made (same device and inode, still empty) and unlinks it relative to that directory.

use super::host_dir::stat_at;
use airlock_policy::ProtectedKind;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// A placeholder airlock made: the directory it is in and the placeholder itself (both held
/// open), its name in that directory and what kind it is. Holding the placeholder open keeps its
/// inode allocated, so no other file can take its device and inode number while airlock (or the
/// sentinel) may still remove it.
#[derive(Debug)]
pub(crate) struct MadeEntry {
    parent: OwnedFd,
    pin: OwnedFd,
    name: CString,
    kind: ProtectedKind,
}

/// What removing a made entry did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    Removed,
    /// Nothing by that name is in the directory any more.
    Gone,
    /// The name now names something else (another file, a symlink): left alone.
    Replaced,
    /// Still the placeholder, but the box (or someone) put something in it: left alone.
    NotEmpty,
    /// The look-up or the unlink failed otherwise (errno): left alone.
    Failed(i32),
}

impl MadeEntry {
    /// The entry `name` of `kind` in `parent`; `pin` is the placeholder itself.
    pub(super) fn new(
        parent: OwnedFd,
        pin: OwnedFd,
        name: CString,
        kind: ProtectedKind,
    ) -> MadeEntry {
        MadeEntry {
            parent,
            pin,
            name,
            kind,
        }
    }

    /// Removes the entry if it is still the placeholder airlock made and still empty.
    ///
    /// The name is looked up in the directory held since creation, so wherever that directory
    /// has been moved to, nothing outside it is touched. Between the check and the unlink the
    /// name could be swapped for another entry of the same directory, which would then be
    /// unlinked instead (a directory only if empty): an entry in a directory of the box's own
    /// writable grant, which the box could have removed itself.
    pub(crate) fn remove(&self) -> Removal {
        let st = match stat_at(&self.parent, &self.name) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Removal::Gone,
            Err(e) => return Removal::Failed(e.raw_os_error().unwrap_or(0)),
        };
        let ours = match fstat(&self.pin) {
            Ok(ours) => ours,
            Err(e) => return Removal::Failed(e.raw_os_error().unwrap_or(0)),
        };
        if (st.st_dev, st.st_ino) != (ours.st_dev, ours.st_ino) {
            return Removal::Replaced;
        }
        let flags = match self.kind {
            ProtectedKind::Dir => libc::AT_REMOVEDIR,
            ProtectedKind::File if st.st_size != 0 => return Removal::NotEmpty,
            ProtectedKind::File => 0,
        };
        // SAFETY: the descriptor is open and name a valid C string.
        let r = unsafe { libc::unlinkat(self.parent.as_raw_fd(), self.name.as_ptr(), flags) };
        if r == 0 {
            return Removal::Removed;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOTEMPTY | libc::EEXIST) => Removal::NotEmpty,
            Some(libc::ENOENT) => Removal::Gone,
            e => Removal::Failed(e.unwrap_or(0)),
        }
    }

    /// The descriptors to hand to the cleanup sentinel with [`record`](Self::record): the
    /// directory, then the placeholder.
    pub(crate) fn fds(&self) -> [libc::c_int; 2] {
        [self.parent.as_raw_fd(), self.pin.as_raw_fd()]
    }

    /// The entry without its descriptors, as one line for the cleanup sentinel:
    /// `<dir|file> <name>`.
    pub(crate) fn record(&self) -> String {
        let kind = match self.kind {
            ProtectedKind::Dir => "dir",
            ProtectedKind::File => "file",
        };
        format!("{kind} {}", self.name.to_string_lossy())
    }

    /// The entry a [`record`](Self::record) describes, with the descriptors [`fds`](Self::fds)
    /// gave; `None` if the record is malformed.
    pub(crate) fn from_record(record: &str, parent: OwnedFd, pin: OwnedFd) -> Option<MadeEntry> {
        let (kind, name) = record.split_once(' ')?;
        let kind = match kind {
            "dir" => ProtectedKind::Dir,
            "file" => ProtectedKind::File,
            _ => return None,
        };
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return None;
        }
        Some(MadeEntry {
            parent,
            pin,
            name: CString::new(name).ok()?,
            kind,
        })
    }
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: st is plain data for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st a valid stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0 {
        Ok(st)
    } else {
        Err(io::Error::last_os_error())
    }
}
