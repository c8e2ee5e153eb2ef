//! A host directory held open as an `O_PATH` descriptor, and the few `*at` calls the placeholder
//! walk makes relative to it. Nothing here resolves a path from `/` except [`HostDir::open_root`]:
//! every other name is one component looked up in this directory, never following a symlink.

use super::made::MadeEntry;
use airlock_policy::ProtectedKind;
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a directory entry is, not following a symlink.
pub(super) enum Child {
    Missing,
    Dir,
    Other,
}

/// An `O_PATH` descriptor of a host directory, closed on drop.
#[derive(Debug)]
pub(super) struct HostDir(OwnedFd);

impl HostDir {
    /// The mount's root itself (symlinks in the path the user gave are theirs to follow).
    pub(super) fn open_root(root: &Path) -> io::Result<HostDir> {
        let c = cstr(root.as_os_str())?;
        // SAFETY: c is a valid C string; the result is checked before use.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        owned(fd).map(HostDir)
    }

    pub(super) fn child_kind(&self, name: &OsStr) -> io::Result<Child> {
        match stat_at(&self.0, &cstr(name)?) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => Ok(Child::Dir),
            Ok(_) => Ok(Child::Other),
            Err(e) => match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(Child::Missing),
                Some(libc::ENOTDIR) => Ok(Child::Other),
                _ => Err(e),
            },
        }
    }

    /// The child directory `name`, or `None` if it is no longer a directory (or a symlink now).
    pub(super) fn descend(&self, name: &OsStr) -> io::Result<Option<HostDir>> {
        let c = cstr(name)?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and c a valid C string; the result is checked.
        let fd = unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags) };
        match owned(fd) {
            Ok(d) => Ok(Some(HostDir(d))),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTDIR | libc::ELOOP | libc::ENOENT)
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Makes the placeholder `name` of `kind` in this directory, which the returned entry keeps
    /// open to remove it later. `None` if something appeared there meanwhile.
    pub(super) fn make(self, name: &OsStr, kind: ProtectedKind) -> io::Result<Option<MadeEntry>> {
        let c = cstr(name)?;
        let pin = match kind {
            ProtectedKind::Dir => self.make_dir(&c)?,
            ProtectedKind::File => self.make_file(&c)?,
        };
        Ok(pin.map(|pin| MadeEntry::new(self.0, pin, c, kind)))
    }

    /// Makes directory `name` and opens it (`O_PATH`).
    fn make_dir(&self, name: &CStr) -> io::Result<Option<OwnedFd>> {
        // SAFETY: the descriptor is open and name a valid C string.
        let r = unsafe { libc::mkdirat(self.0.as_raw_fd(), name.as_ptr(), 0o777) };
        if !created(r)? {
            return Ok(None);
        }
        // mkdirat gives no descriptor: open what is there now, which can only be the directory
        // just made unless the name was swapped within microseconds (then nothing there is ours
        // to remove later, and the run stops).
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and name a valid C string; the result is checked.
        let fd = unsafe { libc::openat(self.0.as_raw_fd(), name.as_ptr(), flags) };
        owned(fd).map(Some).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the directory airlock made was replaced at once: {e}"),
            )
        })
    }

    /// Makes the empty file `name` (never opening anything that exists), returning the
    /// descriptor the creation gave (write-only; nothing is ever written to it).
    fn make_file(&self, name: &CStr) -> io::Result<Option<OwnedFd>> {
        let flags = libc::O_CREAT
            | libc::O_EXCL
            | libc::O_WRONLY
            | libc::O_NOFOLLOW
            | libc::O_NONBLOCK
            | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and name a valid C string; the result is checked.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                flags,
                0o666 as libc::c_uint,
            )
        };
        if fd < 0 {
            created(fd)?;
            return Ok(None);
        }
        owned(fd).map(Some)
    }
}

/// `fstatat(dir, name)` without following a symlink.
pub(super) fn stat_at(dir: &OwnedFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: st is plain data for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open, name a valid C string, st a valid stat buffer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r == 0 {
        Ok(st)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The outcome of a creating call that returned `r` (`0` made; `-1` with `EEXIST` already there).
fn created(r: libc::c_int) -> io::Result<bool> {
    if r >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EEXIST) {
        Ok(false)
    } else {
        Err(e)
    }
}

pub(super) fn cstr(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path contains a NUL byte"))
}
