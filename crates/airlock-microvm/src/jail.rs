//! QEMU's jail: the VMM runs in a user namespace of its own, where it is uid 1000 mapped to the
//! caller's uid (so it holds no capability on the host, and a caller running as root gives the
//! VMM no root), and in a mount namespace of its own in which the protected paths of every
//! writable share are read-only binds, their holders (`.git`) pinned as mount points and the
//! denied paths covered. QEMU's 9p server resolves the guest's requests in that namespace, so
//! these hold even against a guest kernel the box owns.
//!
//! [`VmmJail::prepare`] does every allocation beforehand; [`Prepared::enter`] runs in the forked
//! child before `execve` and only makes system calls.

use crate::MicrovmError;
use airlock_jail::mount_attr::{self, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};

/// The uid and gid QEMU (and so every file it owns as seen by the guest) has in its namespace.
pub const VMM_UID: u32 = airlock_policy::INSIDE_UID;
pub const VMM_GID: u32 = airlock_policy::INSIDE_GID;

/// What happens to one host path in QEMU's mount namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoverKind {
    /// A directory holding protected paths, bound onto itself: it stays writable but cannot be
    /// renamed, removed or replaced (anything but a directory there is made read-only instead).
    Pin,
    /// Kept visible, read-only (a symlink is covered by an empty read-only file).
    ReadOnly,
    /// Hidden behind an empty read-only node.
    Hide,
}

/// One host path QEMU sees differently.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostCover {
    pub path: PathBuf,
    pub kind: CoverKind,
}

/// The jail of one QEMU, as data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VmmJail {
    /// The host ids QEMU's [`VMM_UID`]/[`VMM_GID`] stand for (the caller's).
    pub host_uid: u32,
    pub host_gid: u32,
    /// In order: pins first, then read-only and hidden paths.
    pub covers: Vec<HostCover>,
    /// An empty read-only file and directory to cover paths with.
    pub empty_file: PathBuf,
    pub empty_dir: PathBuf,
}

/// A [`VmmJail`] with every string made, ready for the forked child.
pub struct Prepared {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    covers: Vec<(CString, CoverKind)>,
    empty_file: CString,
    empty_dir: CString,
}

fn c(path: &Path) -> Result<CString, MicrovmError> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        MicrovmError::Invalid(format!("the path {} contains a NUL byte", path.display()))
    })
}

impl VmmJail {
    /// The jail of a QEMU started by the calling user.
    pub fn for_caller(covers: Vec<HostCover>, empties: (PathBuf, PathBuf)) -> VmmJail {
        // SAFETY: geteuid and getegid cannot fail.
        let (host_uid, host_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        VmmJail {
            host_uid,
            host_gid,
            covers,
            empty_file: empties.0,
            empty_dir: empties.1,
        }
    }

    /// Makes every string the child needs.
    pub fn prepare(&self) -> Result<Prepared, MicrovmError> {
        let covers = self
            .covers
            .iter()
            .map(|cv| Ok((c(&cv.path)?, cv.kind)))
            .collect::<Result<_, MicrovmError>>()?;
        Ok(Prepared {
            uid_map: format!("{VMM_UID} {} 1\n", self.host_uid).into_bytes(),
            gid_map: format!("{VMM_GID} {} 1\n", self.host_gid).into_bytes(),
            covers,
            empty_file: c(&self.empty_file)?,
            empty_dir: c(&self.empty_dir)?,
        })
    }
}

/// Makes (once) the empty file and directory covers are made of, under `cache`.
pub fn empties(cache: &Path) -> Result<(PathBuf, PathBuf), MicrovmError> {
    let dir = cache.join("empty");
    let file = dir.join("file");
    let sub = dir.join("dir");
    let err = |e| MicrovmError::io(format!("cannot make {}", dir.display()), e);
    std::fs::create_dir_all(&sub).map_err(err)?;
    if !file.is_file() {
        std::fs::write(&file, b"").map_err(err)?;
    }
    use std::os::unix::fs::PermissionsExt;
    for p in [&file, &sub] {
        let mode = if p == &sub { 0o555 } else { 0o444 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(err)?;
    }
    Ok((file, sub))
}

// ---- Below: runs in the forked child between fork and exec. No allocation, no locks. ----

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `/proc/self/fd/<fd>` in a stack buffer, NUL-terminated.
struct FdPath([u8; 32]);

impl FdPath {
    fn new(fd: libc::c_int) -> FdPath {
        let mut buf = [0u8; 32];
        let prefix = b"/proc/self/fd/";
        buf[..prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 12];
        let mut n = fd.unsigned_abs();
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in 0..len {
            buf[prefix.len() + i] = digits[len - 1 - i];
        }
        FdPath(buf)
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.0.as_ptr().cast()
    }
}

/// Writes `data` to the file at `path` in one write.
fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: a valid C string.
    let fd = cvt(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) })?;
    // SAFETY: data is a valid slice; fd was just opened.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = io::Error::last_os_error();
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if n != data.len() as isize {
        return Err(err);
    }
    Ok(())
}

fn bind(source: *const libc::c_char, target: *const libc::c_char) -> io::Result<()> {
    // SAFETY: both are valid NUL-terminated strings; the other arguments are null or flags.
    cvt(unsafe {
        libc::mount(
            source,
            target,
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })
    .map(|_| ())
}

impl Prepared {
    /// Enters the jail: new user and mount namespaces, the id maps, the covers. Called in the
    /// forked child only (`pre_exec`); QEMU's exec then drops every capability (its uid is not
    /// 0 in its namespace).
    pub fn enter(&self) -> io::Result<()> {
        // A server holding secret values is not dumpable, and this child inherited that: its
        // /proc/self files would then belong to the host's root, and an unprivileged caller
        // could not write its own id maps below (EACCES). The child is about to exec QEMU,
        // which replaces the memory it copied from the server; it is made dumpable again for
        // that short way (a few system calls during which a process of the same host user,
        // not a box, could read that copy).
        // SAFETY: prctl with integer arguments; it changes only this child's dump flag.
        cvt(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) })?;
        // SAFETY: unshare with flags only; the child is single-threaded.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // SAFETY: flags only, on "/": nothing done below propagates back to the host.
        cvt(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })?;
        for (path, kind) in &self.covers {
            self.cover(path, *kind)?;
        }
        Ok(())
    }

    fn cover(&self, path: &CStr, kind: CoverKind) -> io::Result<()> {
        let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), flags) };
        if fd == -1 {
            let err = io::Error::last_os_error();
            // Missing (or under a non-directory): nothing there to protect or hide.
            return match err.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENOTDIR) => Ok(()),
                _ => Err(err),
            };
        }
        let result = self.cover_fd(fd, path, kind);
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        result
    }

    fn cover_fd(&self, fd: libc::c_int, path: &CStr, kind: CoverKind) -> io::Result<()> {
        // SAFETY: st is plain data for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is a valid O_PATH descriptor and st a valid buffer.
        cvt(unsafe { libc::fstat(fd, &mut st) })?;
        let fmt = st.st_mode & libc::S_IFMT;
        let target = FdPath::new(fd);
        if kind == CoverKind::Pin && fmt == libc::S_IFDIR {
            return bind(target.as_ptr(), target.as_ptr());
        }
        let source = match (kind, fmt) {
            (CoverKind::Hide, libc::S_IFDIR) => self.empty_dir.as_ptr(),
            (CoverKind::Hide, _) | (_, libc::S_IFLNK) => self.empty_file.as_ptr(),
            _ => target.as_ptr(),
        };
        bind(source, target.as_ptr())?;
        mount_attr::set(
            libc::AT_FDCWD,
            path,
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_RECURSIVE,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_fd_path_is_spelled_in_decimal() {
        for (fd, want) in [(0, "0"), (7, "7"), (42, "42"), (1234, "1234")] {
            let p = FdPath::new(fd);
            let s = CStr::from_bytes_until_nul(&p.0).unwrap().to_str().unwrap();
            assert_eq!(s, format!("/proc/self/fd/{want}"));
        }
    }
}
