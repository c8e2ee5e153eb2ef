//! Extended attributes in the `user.` namespace: read with an entry, set on request. A
//! symlink's own attributes are used, never its target's (the `l*xattr` calls).

use airlock_protocol::XATTR_NAMESPACE;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Longest attribute list read (names, NUL-separated); a longer one is read as empty.
const MAX_LIST: usize = 64 * 1024;
/// Longest value read; a longer one is skipped.
const MAX_VALUE: usize = 64 * 1024;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

/// The `user.` attributes of `path` whose values are UTF-8. Best effort: a file system without
/// extended attributes, a vanished file or an unreadable value give fewer (or no) entries.
pub(crate) fn read_user(path: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(c) = c_path(path) else { return out };
    let mut names = vec![0u8; MAX_LIST];
    // SAFETY: `c` is NUL-terminated; the buffer is valid for `names.len()` bytes.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    let Ok(n) = usize::try_from(n) else {
        return out;
    };
    let mut value = vec![0u8; MAX_VALUE];
    for name in names[..n.min(names.len())].split(|b| *b == 0) {
        if !name.starts_with(XATTR_NAMESPACE.as_bytes()) {
            continue;
        }
        let Ok(cname) = CString::new(name) else {
            continue;
        };
        // SAFETY: both strings are NUL-terminated; the buffer is valid for `value.len()`.
        let len = unsafe {
            libc::lgetxattr(
                c.as_ptr(),
                cname.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        let Ok(len) = usize::try_from(len) else {
            continue;
        };
        if let (Ok(k), Ok(v)) = (
            std::str::from_utf8(name),
            std::str::from_utf8(&value[..len.min(value.len())]),
        ) {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

/// Sets each attribute on `path` (names already checked by the protocol to be `user.` ones).
pub(crate) fn set(path: &Path, xattrs: &BTreeMap<String, String>) -> io::Result<()> {
    let c = c_path(path)?;
    for (name, value) in xattrs {
        let cname = CString::new(name.as_bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "an attribute name holds NUL")
        })?;
        // SAFETY: both strings are NUL-terminated; the value buffer is valid for its length.
        let rc = unsafe {
            libc::lsetxattr(
                c.as_ptr(),
                cname.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
