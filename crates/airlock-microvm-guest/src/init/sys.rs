//! The init's raw syscalls, each turned into a typed error naming what it was doing.

use std::ffi::CString;
use std::io;

/// A failed step of the init: what it was doing, and the system's answer.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct InitError {
    pub what: String,
    #[source]
    pub source: io::Error,
}

pub type Result<T> = std::result::Result<T, InitError>;

/// Turns a `-1` return into the error of `what`.
pub fn cvt(ret: libc::c_int, what: impl FnOnce() -> String) -> Result<libc::c_int> {
    if ret == -1 {
        Err(InitError {
            what: what(),
            source: io::Error::last_os_error(),
        })
    } else {
        Ok(ret)
    }
}

/// An error of `what` from an `io::Error`.
pub fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> InitError {
    let what = what.into();
    move |source| InitError { what, source }
}

pub fn cstr(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| InitError {
        what: format!("the path {s:?} holds a NUL byte"),
        source: io::Error::from(io::ErrorKind::InvalidInput),
    })
}

/// `mount(2)` with string arguments.
pub fn mount(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<()> {
    let (s, t, f) = (cstr(source)?, cstr(target)?, cstr(fstype)?);
    let d = data.map(cstr).transpose()?;
    let dp = d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr().cast());
    // SAFETY: every pointer is a valid NUL-terminated string or null for `data`.
    let ret = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, dp) };
    cvt(ret, || {
        format!("cannot mount {source} ({fstype}) on {target}")
    })
    .map(|_| ())
}

/// Binds `source` on `target`, read-only when asked (a bind is remounted to become read-only).
pub fn bind(source: &str, target: &str, read_only: bool) -> Result<()> {
    mount(source, target, "", libc::MS_BIND | libc::MS_REC, None)?;
    if read_only {
        mount(
            "",
            target,
            "",
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_REC,
            None,
        )?;
    }
    Ok(())
}

pub fn mkdir_all(path: &str) -> Result<()> {
    std::fs::create_dir_all(path).map_err(io_err(format!("cannot make directory {path}")))
}

/// Writes a file whole (making its parent directory).
pub fn write_file(path: &str, data: &[u8]) -> Result<()> {
    if let Some(parent) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(parent)
            .map_err(io_err(format!("cannot make the parent of {path}")))?;
    }
    std::fs::write(path, data).map_err(io_err(format!("cannot write {path}")))
}

/// Sets the wall clock to `ns` Unix nanoseconds (PID 1 is root in the guest).
pub fn set_wall_clock(ns: u64) -> Result<()> {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: clock_settime with a valid timespec on the stack.
    cvt(
        unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &ts) },
        || "cannot set the guest's clock to the host's".to_string(),
    )
    .map(|_| ())
}
