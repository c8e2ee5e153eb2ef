//! Paths resolved inside a directory as if it were `/`: `openat2` with `RESOLVE_IN_ROOT`, so a
//! symlink (absolute or `..`) in an untrusted tree — a template image, a box's root — never
//! leads out of it, and magic links (`/proc/self/fd/N`) are refused.

use crate::sys::{cstring, cvt_long};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `openat2(root, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`; `path` is taken
/// relative to `root` even when absolute.
pub fn open(root: &OwnedFd, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_IN_ROOT: u64 = 0x10;
    let rel = path.strip_prefix("/").unwrap_or(path);
    let p = cstring(if rel.as_os_str().is_empty() {
        b"."
    } else {
        rel.as_os_str().as_bytes()
    })?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a valid directory descriptor, C string and open_how of the size passed.
    let fd = cvt_long(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            p.as_ptr(),
            &how,
            std::mem::size_of::<OpenHow>(),
        )
    })?;
    // SAFETY: a fresh descriptor from openat2, ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The contents of the regular file at `path` inside the tree `root` (resolved there, as a
/// box on that tree would see it), or `None` when there is none: missing, or not a regular
/// file (a FIFO is opened without blocking and left unread). More than `max` bytes is an error.
pub fn read_file(root: &Path, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    let dir = std::fs::File::open(root)?;
    let file = match open(
        &OwnedFd::from(dir),
        path,
        libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
    ) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > max {
        return Err(io::Error::other(format!(
            "{} is {} bytes, more than the {max} expected",
            path.display(),
            meta.len()
        )));
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut data)?;
    Ok(Some(data))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_resolve_inside_the_tree_and_never_out_of_it() {
        let base = std::env::temp_dir().join(format!("airlock-in-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (tree, outside) = (base.join("tree"), base.join("outside"));
        std::fs::create_dir_all(tree.join("etc")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "the host's").unwrap();
        std::fs::write(tree.join("etc/real"), "the tree's").unwrap();
        // An absolute link to the outside's path and a climbing one: both stay in the tree.
        std::os::unix::fs::symlink(outside.join("secret"), tree.join("etc/abs")).unwrap();
        std::os::unix::fs::symlink("../../outside/secret", tree.join("etc/up")).unwrap();
        std::os::unix::fs::symlink("/etc/real", tree.join("etc/inside")).unwrap();
        let read = |p: &str| read_file(&tree, Path::new(p), 1 << 20).unwrap();
        assert_eq!(read("/etc/real").as_deref(), Some(&b"the tree's"[..]));
        assert_eq!(read("/etc/inside").as_deref(), Some(&b"the tree's"[..]));
        assert_eq!(read("/etc/abs"), None, "an absolute link left the tree");
        assert_eq!(read("/etc/up"), None, "a climbing link left the tree");
        assert_eq!(read("/etc"), None, "a directory is no file");
        assert_eq!(read("/missing"), None);
        assert!(read_file(&tree, Path::new("/etc/real"), 3).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
