//! System calls relative to a directory descriptor, each on one name (never a path) and never
//! following a symlink in that name.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    let fd = cvt(fd)?;
    // SAFETY: fd was just returned by the kernel and belongs to nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn cname(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name contains a NUL byte"))
}

/// The entry `name` in `dir`, not following a symlink; `None` if there is none.
pub(super) fn stat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Option<libc::stat>> {
    // SAFETY: st is plain data for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: dir is open, name a valid C string, st a valid buffer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    match cvt(r) {
        Ok(_) => Ok(Some(st)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What a descriptor is open on.
pub(super) fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: st is plain data for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st a valid buffer.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

pub(super) fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

pub(super) fn is_file(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

pub(super) fn is_symlink(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// Opens `name` in `dir` with `flags` plus `O_NOFOLLOW | O_CLOEXEC` (and `O_NONBLOCK`, so a
/// FIFO put there cannot make airlock wait).
pub(super) fn open(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: dir is open and name a valid C string; the result is checked.
    owned(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o600 as libc::c_uint) })
}

/// Creates the new file `name` in `dir` (never opening one that exists), for writing.
pub(super) fn create(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    open(dir, name, libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY)
}

/// A directory `name` in `dir` as an `O_PATH` descriptor (for walking; no read permission
/// needed), never through a symlink.
pub(super) fn open_dir_path(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    open(dir, name, libc::O_PATH | libc::O_DIRECTORY)
}

/// The names in the directory `dir` (any descriptor of it), without `.` and `..`, sorted.
pub(super) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<CString>> {
    let readable = open(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY)?;
    let raw = std::mem::ManuallyDrop::new(readable).as_raw_fd();
    // SAFETY: raw is an open directory descriptor we own; fdopendir takes it over (closedir
    // below closes it).
    let d = unsafe { libc::fdopendir(raw) };
    if d.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so raw is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut names = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; reset it to tell the end from an error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: d is a valid DIR stream.
        let ent = unsafe { libc::readdir(d) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            break match e.raw_os_error() {
                Some(0) | None => Ok(()),
                _ => Err(e),
            };
        }
        // SAFETY: readdir returned a valid entry whose d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    };
    // SAFETY: d is a valid DIR stream, closed once.
    unsafe { libc::closedir(d) };
    result?;
    names.sort();
    Ok(names)
}

/// The value of extended attribute `attr` of the open file `fd`, `None` if it has none.
pub(super) fn xattr(fd: BorrowedFd<'_>, attr: &CStr) -> io::Result<Option<Vec<u8>>> {
    let mut buf = vec![0u8; 256];
    // SAFETY: fd is open, attr a valid C string, buf valid for buf.len() bytes.
    let n = unsafe {
        libc::fgetxattr(
            fd.as_raw_fd(),
            attr.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n >= 0 {
        buf.truncate(n as usize);
        return Ok(Some(buf));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENODATA) | Some(libc::ENOTSUP) => Ok(None),
        // Longer than any value overlay writes: present, whatever it says.
        Some(libc::ERANGE) => Ok(Some(Vec::new())),
        _ => Err(e),
    }
}

/// Where the symlink `name` in `dir` points.
pub(super) fn read_link(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<CString> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: dir is open, name a valid C string, buf valid for buf.len() bytes.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    CString::new(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "NUL in a link"))
}

pub(super) fn symlink(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: both are valid C strings and dir is open.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) })?;
    Ok(())
}

pub(super) fn mkfifo(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: dir is open and name a valid C string.
    cvt(unsafe { libc::mkfifoat(dir.as_raw_fd(), name.as_ptr(), 0o600) })?;
    Ok(())
}

pub(super) fn mkdir(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: dir is open and name a valid C string.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o700) })?;
    Ok(())
}

/// Removes the non-directory (`dir_entry` false) or empty directory `name` from `dir`.
pub(super) fn unlink(dir: BorrowedFd<'_>, name: &CStr, dir_entry: bool) -> io::Result<()> {
    let flags = if dir_entry { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: dir is open and name a valid C string.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) })?;
    Ok(())
}

/// Renames `from` to `to`, both in `dir` (replacing a non-directory at `to`).
pub(super) fn rename(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    let d = dir.as_raw_fd();
    // SAFETY: d is open and both names are valid C strings.
    cvt(unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) })?;
    Ok(())
}

/// `/proc/self/fd/N` of a descriptor: a name for exactly the inode it is open on (operations
/// through it do not resolve the original path again).
pub(super) fn fd_path(fd: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Sets the permission bits of the inode `fd` is open on (any descriptor, `O_PATH` too).
pub(super) fn chmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(fd_path(fd), std::fs::Permissions::from_mode(mode))
}

/// Sets the access and modification times of the inode `fd` is open on to those of `st`.
pub(super) fn set_times(fd: BorrowedFd<'_>, st: &libc::stat) -> io::Result<()> {
    let p = cname(fd_path(fd).as_os_str())?;
    let times = times_of(st);
    // SAFETY: p is a valid C string and times an array of two timespecs.
    cvt(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), times.as_ptr(), 0) })?;
    Ok(())
}

/// Sets the times of the symlink `name` in `dir` itself.
pub(super) fn set_link_times(dir: BorrowedFd<'_>, name: &CStr, st: &libc::stat) -> io::Result<()> {
    let times = times_of(st);
    // SAFETY: dir is open, name a valid C string and times an array of two timespecs.
    cvt(unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            name.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(())
}

fn times_of(st: &libc::stat) -> [libc::timespec; 2] {
    [
        libc::timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec,
        },
        libc::timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec,
        },
    ]
}
