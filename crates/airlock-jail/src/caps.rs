//! Dropping every capability before the box's command runs.

use crate::sys::cvt;
use std::io;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability from the bounding, ambient, effective, permitted and inheritable sets,
/// and locks the securebits so a uid-0 process inside regains nothing on execve.
pub fn drop_all() -> io::Result<()> {
    drop_sets(true)
}

/// [`drop_all`] for gVisor's Sentry, which has neither ambient capabilities nor securebits (it
/// answers both prctls with `EINVAL`): drops the bounding, effective, permitted and inheritable
/// sets. A uid-0 process still regains nothing on execve: what exec grants root is masked by
/// the bounding set, now empty (checked by the shared root test: `CapPrm`/`CapEff`/`CapBnd` of
/// a root command are all zero).
pub fn drop_all_in_sentry() -> io::Result<()> {
    drop_sets(false)
}

/// `linux`: also the ambient set and the securebits.
fn drop_sets(linux: bool) -> io::Result<()> {
    // The bounding set: drop every capability the kernel knows (stop at the first EINVAL).
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(err);
        }
    }
    if linux {
        // SAFETY: prctl with integer arguments only.
        cvt(unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        })?;
        // SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED
        // | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED
        let securebits: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;
        // SAFETY: prctl with integer arguments only.
        cvt(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, securebits, 0, 0, 0) })?;
    }
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are valid capset structures (version 3 takes two CapData).
    cvt(unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int })?;
    Ok(())
}

/// Switches the calling process (the box's init, still holding every capability of its user
/// namespace) to `uid`/`gid` inside that namespace without losing those capabilities, so that the
/// files it creates while building the root belong to a mapped id.
pub fn become_user_keeping_caps(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: plain id queries.
    if unsafe { libc::getuid() == uid && libc::getgid() == gid } {
        return Ok(());
    }
    // SAFETY: prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) })?;
    // SAFETY: setresgid/setresuid with integer arguments.
    cvt(unsafe { libc::setresgid(gid, gid, gid) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::setresuid(uid, uid, uid) })?;
    // SAFETY: prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 0, 0, 0, 0) })?;
    // KEEPCAPS keeps the permitted set; raise the effective set back to it.
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are valid capget structures (version 3 fills two CapData).
    cvt(unsafe { libc::syscall(libc::SYS_capget, &header, data.as_mut_ptr()) as libc::c_int })?;
    for d in &mut data {
        d.effective = d.permitted;
    }
    // SAFETY: header and data are valid capset structures.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int })?;
    Ok(())
}
