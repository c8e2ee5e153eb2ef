//! Protected paths that do not exist yet get an empty placeholder on the host for the duration of
//! the run, so the box can see them read-only instead of creating them. Placeholders are removed
//! afterwards if they are still empty (by the supervisor, or by the sentinel if airlock dies).

use airlock_policy::{FilesystemPolicy, ProtectedKind, ResolvedPolicy, PROTECTED_PATHS};
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A placeholder created on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub host: PathBuf,
    pub dir: bool,
}

/// Creates placeholders for the missing protected paths of every protected mount, returning the
/// created placeholders and the inside paths that must be covered in addition to the plan's
/// (the first missing component, when a protected path's parent is missing too).
///
/// The walk below a mount's root never follows a symlink: a `.git` that is a symlink (a box with
/// a wider workspace could have made it) names a directory outside the mount, and a placeholder
/// made through it would be a file written outside. Such a path is left alone; the box's root
/// covers the symlink itself.
pub fn create(policy: &ResolvedPolicy) -> std::io::Result<(Vec<Placeholder>, Vec<PathBuf>)> {
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &policy.filesystem
    else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut made = Vec::new();
    let mut covers = Vec::new();
    for m in workspace.iter().chain(grants.iter()).filter(|m| m.protect) {
        for p in PROTECTED_PATHS {
            let comps: Vec<&OsStr> = Path::new(p.relative).iter().collect();
            let result = first_missing(&m.host, &comps, p.kind);
            match result {
                Ok(Some(depth)) => {
                    let rel: PathBuf = comps[..depth].iter().collect();
                    let last = depth == comps.len();
                    made.push(Placeholder {
                        host: m.host.join(&rel),
                        dir: !last || p.kind == ProtectedKind::Dir,
                    });
                    if !last {
                        covers.push(m.inside.join(&rel));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    remove(&made);
                    let at = m.host.join(p.relative);
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot create placeholder for {}: {e}", at.display()),
                    ));
                }
            }
        }
    }
    Ok((made, covers))
}

/// Walks `comps` down from `root` without following symlinks and creates the first missing
/// component (a directory unless it is the last one of a file path). Returns how many
/// components the created path has, or `None` when nothing is to be made: everything exists,
/// or a component is a symlink or not a directory (a `.git` file of a worktree or submodule).
fn first_missing(
    root: &Path,
    comps: &[&OsStr],
    kind: ProtectedKind,
) -> std::io::Result<Option<usize>> {
    let mut dir = match Dir::open_root(root) {
        Ok(d) => d,
        // A writable grant of a single file: no protected path can be under it.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(e),
    };
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        match dir.child_kind(comp)? {
            Child::Dir if !last => match dir.descend(comp)? {
                Some(next) => dir = next,
                // Swapped for something else since: leave it alone.
                None => return Ok(None),
            },
            Child::Dir | Child::Other => return Ok(None),
            Child::Missing => {
                let made = if !last || kind == ProtectedKind::Dir {
                    dir.make_dir(comp)?
                } else {
                    dir.make_file(comp)?
                };
                return Ok(made.then_some(i + 1));
            }
        }
    }
    Ok(None)
}

/// What a directory entry is, not following a symlink.
enum Child {
    Missing,
    Dir,
    Other,
}

/// An `O_PATH` descriptor of a directory, closed on drop.
struct Dir(OwnedFd);

impl Dir {
    /// The mount's root itself (symlinks in the path the user gave are theirs to follow).
    fn open_root(root: &Path) -> std::io::Result<Dir> {
        let c = cstr(root.as_os_str())?;
        // SAFETY: c is a valid C string; the result is checked before use.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Dir::owned(fd)
    }

    fn owned(fd: libc::c_int) -> std::io::Result<Dir> {
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by the kernel and is owned by nobody else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn child_kind(&self, name: &OsStr) -> std::io::Result<Child> {
        let c = cstr(name)?;
        // SAFETY: st is plain data for fstatat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open, c a valid C string, st a valid stat buffer.
        let r = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r == 0 {
            return Ok(if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                Child::Dir
            } else {
                Child::Other
            });
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(Child::Missing),
            Some(libc::ENOTDIR) => Ok(Child::Other),
            _ => Err(e),
        }
    }

    /// The child directory `name`, or `None` if it is no longer a directory (or a symlink now).
    fn descend(&self, name: &OsStr) -> std::io::Result<Option<Dir>> {
        let c = cstr(name)?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and c a valid C string; the result is checked.
        let fd = unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags) };
        match Dir::owned(fd) {
            Ok(d) => Ok(Some(d)),
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

    /// Makes directory `name`; `false` if something appeared there meanwhile.
    fn make_dir(&self, name: &OsStr) -> std::io::Result<bool> {
        let c = cstr(name)?;
        // SAFETY: the descriptor is open and c a valid C string.
        let r = unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o777) };
        created(r)
    }

    /// Makes the empty file `name` (never opening anything that exists); `false` if something
    /// appeared there meanwhile.
    fn make_file(&self, name: &OsStr) -> std::io::Result<bool> {
        let c = cstr(name)?;
        let flags = libc::O_CREAT
            | libc::O_EXCL
            | libc::O_WRONLY
            | libc::O_NOFOLLOW
            | libc::O_NONBLOCK
            | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and c a valid C string; the result is checked.
        let fd =
            unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags, 0o666 as libc::c_uint) };
        if fd < 0 {
            return created(fd);
        }
        // SAFETY: fd was just returned by the kernel and is ours to close.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(true)
    }
}

/// The outcome of a creating call that returned `r` (`0` made; `-1` with `EEXIST` already there).
fn created(r: libc::c_int) -> std::io::Result<bool> {
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EEXIST) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn cstr(s: &OsStr) -> std::io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a path contains a NUL byte",
        )
    })
}

/// Removes placeholders that are still empty, deepest first.
pub fn remove(made: &[Placeholder]) {
    for p in made.iter().rev() {
        remove_one(&p.host, p.dir);
    }
}

/// Removes one placeholder if it is still empty (used by the sentinel too).
pub fn remove_one(host: &Path, dir: bool) {
    if dir {
        let _ = std::fs::remove_dir(host);
    } else if std::fs::symlink_metadata(host)
        .map(|m| m.is_file() && m.len() == 0)
        .unwrap_or(false)
    {
        let _ = std::fs::remove_file(host);
    }
}

#[cfg(test)]
#[path = "placeholders_tests.rs"]
mod tests;
