//! What a build by an unprivileged user needs from the host: mmdebstrap's `--mode=unshare`
//! maps a range of subordinate ids into its user namespace (through `newuidmap` and
//! `newgidmap`), so the user must have one in `/etc/subuid` and `/etc/subgid`. Checked before
//! mmdebstrap runs, so a missing piece is a sentence saying how to add it rather than
//! mmdebstrap's own failure deep in its log.

use crate::error::TemplateError;
use std::path::Path;

/// Whether `text` (the contents of `/etc/subuid` or `/etc/subgid`) gives `name` (or `uid`) a
/// range of at least 65536 ids, what a Debian tree's own accounts need.
pub(crate) fn has_range(text: &str, name: &str, uid: u32) -> bool {
    let uid = uid.to_string();
    text.lines().any(|line| {
        let mut f = line.trim().split(':');
        let (Some(owner), Some(_start), Some(count)) = (f.next(), f.next(), f.next()) else {
            return false;
        };
        (owner == name || owner == uid) && count.trim().parse::<u64>().is_ok_and(|n| n >= 65536)
    })
}

/// The name of the user `uid`, if the passwd database has one.
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, buf's length is passed along.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points into buf, a NUL-terminated string getpwuid_r wrote.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/bin").join(tool).is_file()
}

/// Refuses a rootless build this host cannot do, saying what to add.
pub(crate) fn check(uid: u32) -> Result<(), TemplateError> {
    let name = user_name(uid).unwrap_or_else(|| uid.to_string());
    for tool in ["newuidmap", "newgidmap"] {
        if !on_path(tool) {
            return Err(TemplateError::Unsupported(format!(
                "building a template as an unprivileged user needs {tool} (mmdebstrap --mode=unshare maps subordinate ids with it): install the uidmap package, or build as root"
            )));
        }
    }
    for file in ["/etc/subuid", "/etc/subgid"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if !has_range(&text, &name, uid) {
            return Err(TemplateError::Unsupported(format!(
                "building a template as {name} (not root) needs a range of at least 65536 subordinate ids for {name} in {file} (mmdebstrap --mode=unshare maps them for the tree's own accounts): as root, run `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {name}` with a range no other user has, or build as root"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_found_by_name_or_uid_and_must_be_large_enough() {
        let text =
            "alice:100000:65536\n# bob:1:65536\n1001:200000:65536\ncarol:300000:1000\nbroken\n";
        assert!(has_range(text, "alice", 1000));
        assert!(has_range(text, "dave", 1001), "by uid");
        assert!(!has_range(text, "carol", 1002), "too small a range");
        assert!(!has_range(text, "bob", 1003), "a comment is not an entry");
        assert!(!has_range(text, "broken", 1004));
        assert!(!has_range("", "alice", 1000));
    }
}
