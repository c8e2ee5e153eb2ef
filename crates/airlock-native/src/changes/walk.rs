//! The replay of a change layer onto the host workspace.

use super::at;
use super::guard::{guard, Guard};
use super::{ChangeIssue, ChangesReport};
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Deepest directory nesting applied or removed (each level holds two descriptors).
const MAX_DEPTH: usize = 200;

/// Overlay's marks in the layer (`userxattr`: the `user.` namespace).
const OPAQUE: &CStr = c"user.overlay.opaque";
const WHITEOUT: &CStr = c"user.overlay.whiteout";
const REDIRECT: &CStr = c"user.overlay.redirect";
const METACOPY: &CStr = c"user.overlay.metacopy";

/// Why one entry was not applied.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the change layer marks it with {0}, which airlock does not apply")]
    Unsupported(&'static str),
    #[error("nested deeper than {MAX_DEPTH} directories")]
    TooDeep,
}

fn step(step: &'static str) -> impl FnOnce(io::Error) -> EntryError {
    move |source| EntryError::Step { step, source }
}

struct Walk {
    report: ChangesReport,
}

pub(super) fn apply(layer: &OwnedFd, workspace: &Path) -> ChangesReport {
    let mut w = Walk {
        report: ChangesReport::default(),
    };
    let root = match at::cname(workspace.as_os_str()).and_then(|c| {
        // The workspace's own path is the user's (canonical when resolved): follow it.
        at::open(cwd(), &c, libc::O_PATH | libc::O_DIRECTORY)
    }) {
        Ok(fd) => fd,
        Err(e) => {
            w.fail(
                Path::new("."),
                format!(
                    "cannot open the host workspace: {e}; none of the box's changes were applied"
                ),
            );
            return w.report;
        }
    };
    w.dir(layer.as_fd(), root.as_fd(), Path::new(""), 0);
    w.report
}

/// `AT_FDCWD` as a descriptor, for absolute paths.
fn cwd() -> BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is a valid "descriptor" for the *at calls, and is never closed.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

fn rel_name(rel: &Path, name: &CStr) -> PathBuf {
    rel.join(OsStr::from_bytes(name.to_bytes()))
}

/// Permission bits airlock sets on the host: never set-user-ID or set-group-ID.
fn safe_mode(st: &libc::stat) -> u32 {
    let keep = if at::is_dir(st) { 0o1777 } else { 0o777 };
    st.st_mode & keep
}

impl Walk {
    fn fail(&mut self, rel: &Path, reason: String) {
        self.report.failed.push(ChangeIssue {
            path: rel.display().to_string(),
            reason,
        });
    }

    fn skip(&mut self, rel: &Path, reason: String) {
        self.report.skipped.push(ChangeIssue {
            path: rel.display().to_string(),
            reason,
        });
    }

    /// Applies every entry of the layer directory `upper` to the host directory `host`.
    fn dir(&mut self, upper: BorrowedFd<'_>, host: BorrowedFd<'_>, rel: &Path, depth: usize) {
        let names = match at::list(upper) {
            Ok(n) => n,
            Err(e) => {
                let at = if rel.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    rel
                };
                self.fail(at, format!("cannot read the change layer: {e}"));
                return;
            }
        };
        for name in names {
            let child = rel_name(rel, &name);
            if let Err(e) = self.entry(upper, host, &name, &child, depth) {
                self.fail(&child, e.to_string());
            }
        }
    }

    fn entry(
        &mut self,
        upper: BorrowedFd<'_>,
        host: BorrowedFd<'_>,
        name: &CStr,
        rel: &Path,
        depth: usize,
    ) -> Result<(), EntryError> {
        let Some(st) = at::stat(upper, name)? else {
            return Ok(());
        };
        let g = guard(rel);
        if let Guard::Protected(reason) = g {
            self.skip(rel, format!("protected path, not applied ({reason})"));
            return Ok(());
        }
        let fmt = st.st_mode & libc::S_IFMT;
        if fmt == libc::S_IFCHR && st.st_rdev == 0 {
            return self.whiteout(host, name, rel, g);
        }
        if at::is_dir(&st) {
            return self.directory(upper, host, name, rel, &st, g, depth);
        }
        if g == Guard::Holds {
            self.skip(rel, "holds protected paths: not replaced".into());
            return Ok(());
        }
        if at::is_file(&st) {
            return self.file(upper, host, name, rel, &st);
        }
        if at::is_symlink(&st) {
            return self.symlink(upper, host, name, &st);
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFIFO {
            return self.fifo(host, name, &st);
        }
        self.skip(rel, "a socket or device node: not applied".into());
        Ok(())
    }

    /// A FIFO, as direct mode would leave it (airlock's own host-side code never opens one).
    fn fifo(
        &mut self,
        host: BorrowedFd<'_>,
        name: &CStr,
        st: &libc::stat,
    ) -> Result<(), EntryError> {
        let existing = at::stat(host, name)?;
        let tmp = temp_name();
        at::mkfifo(host, &tmp).map_err(step("create FIFO"))?;
        let prepared = at::open(host, &tmp, libc::O_PATH)
            .and_then(|fd| at::chmod(fd.as_fd(), safe_mode(st)))
            .map_err(step("set mode"))
            .and_then(|_| at::set_link_times(host, &tmp, st).map_err(step("set times")));
        place(host, &tmp, name, existing.as_ref(), prepared)?;
        self.report.written += 1;
        Ok(())
    }

    /// The box deleted `name`: remove it on the host.
    fn whiteout(
        &mut self,
        host: BorrowedFd<'_>,
        name: &CStr,
        rel: &Path,
        g: Guard,
    ) -> Result<(), EntryError> {
        if g == Guard::Holds {
            self.skip(rel, "holds protected paths: not removed".into());
            return Ok(());
        }
        if remove(host, name, 0)? {
            self.report.deleted += 1;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn directory(
        &mut self,
        upper: BorrowedFd<'_>,
        host: BorrowedFd<'_>,
        name: &CStr,
        rel: &Path,
        st: &libc::stat,
        g: Guard,
        depth: usize,
    ) -> Result<(), EntryError> {
        if depth >= MAX_DEPTH {
            return Err(EntryError::TooDeep);
        }
        let up = open_layer(upper, name, libc::O_RDONLY | libc::O_DIRECTORY, 0o500)?;
        if at::xattr(up.as_fd(), REDIRECT)?.is_some() {
            return Err(EntryError::Unsupported("a redirect"));
        }
        let opaque = at::xattr(up.as_fd(), OPAQUE)?.is_some_and(|v| v == b"y");
        let (hd, made) = match at::stat(host, name)? {
            Some(h) if at::is_dir(&h) => (at::open_dir_path(host, name)?, false),
            Some(_) if g == Guard::Holds => {
                self.skip(rel, "holds protected paths: not replaced".into());
                return Ok(());
            }
            existing => {
                if existing.is_some() {
                    remove(host, name, depth)
                        .map_err(step("remove what the directory replaces"))?;
                }
                at::mkdir(host, name).map_err(step("create directory"))?;
                (at::open_dir_path(host, name)?, true)
            }
        };
        if made {
            self.report.written += 1;
        } else if opaque {
            // The box removed the directory and made a new one: what it does not hold goes.
            if g == Guard::Holds {
                self.skip(rel, "holds protected paths: not emptied".into());
            } else {
                let keep = at::list(up.as_fd())?;
                for old in at::list(hd.as_fd())? {
                    if !keep.contains(&old) {
                        let child = rel_name(rel, &old);
                        match remove(hd.as_fd(), &old, depth + 1) {
                            Ok(true) => self.report.deleted += 1,
                            Ok(false) => {}
                            Err(e) => self.fail(&child, format!("not removed: {e}")),
                        }
                    }
                }
            }
        }
        self.dir(up.as_fd(), hd.as_fd(), rel, depth + 1);
        // After the entries: writing them changed the directory's times.
        at::chmod(hd.as_fd(), safe_mode(st)).map_err(step("set mode"))?;
        at::set_times(hd.as_fd(), st).map_err(step("set times"))?;
        Ok(())
    }

    fn file(
        &mut self,
        upper: BorrowedFd<'_>,
        host: BorrowedFd<'_>,
        name: &CStr,
        rel: &Path,
        st: &libc::stat,
    ) -> Result<(), EntryError> {
        let src = open_layer(upper, name, libc::O_RDONLY, 0o400)?;
        if st.st_size == 0 && at::xattr(src.as_fd(), WHITEOUT)?.is_some() {
            return self.whiteout(host, name, rel, guard(rel));
        }
        if at::xattr(src.as_fd(), METACOPY)?.is_some() {
            return Err(EntryError::Unsupported("metacopy"));
        }
        if at::xattr(src.as_fd(), REDIRECT)?.is_some() {
            return Err(EntryError::Unsupported("a redirect"));
        }
        let existing = at::stat(host, name)?;
        if let Some(h) = existing.filter(at::is_file) {
            if h.st_size == st.st_size && same_content(&src, host, name)? {
                // Copied up but unchanged (opened for writing, or only chmod/touch): keep the
                // host file itself, with the layer's mode and times.
                let fd = at::open(host, name, libc::O_PATH)?;
                if at::is_file(&at::fstat(fd.as_fd())?) {
                    at::chmod(fd.as_fd(), safe_mode(st)).map_err(step("set mode"))?;
                    at::set_times(fd.as_fd(), st).map_err(step("set times"))?;
                    return Ok(());
                }
            }
        }
        let (tmp, out) = temp_file(host)?;
        let n = place(host, &tmp, name, existing.as_ref(), copy(&src, out, st))?;
        self.report.written += 1;
        self.report.bytes += n;
        Ok(())
    }

    fn symlink(
        &mut self,
        upper: BorrowedFd<'_>,
        host: BorrowedFd<'_>,
        name: &CStr,
        st: &libc::stat,
    ) -> Result<(), EntryError> {
        let target = at::read_link(upper, name)?;
        let existing = at::stat(host, name)?;
        if existing.as_ref().is_some_and(at::is_symlink)
            && at::read_link(host, name).is_ok_and(|t| t == target)
        {
            at::set_link_times(host, name, st).map_err(step("set times"))?;
            return Ok(());
        }
        let tmp = temp_name();
        at::symlink(&target, host, &tmp).map_err(step("create symlink"))?;
        let prepared = at::set_link_times(host, &tmp, st).map_err(step("set times"));
        place(host, &tmp, name, existing.as_ref(), prepared)?;
        self.report.written += 1;
        Ok(())
    }
}

/// Opens an entry of the change layer, first granting the owner `grant` if its own mode shuts
/// airlock out (a box may leave a file 0000; the layer is the box's and thrown away after).
fn open_layer(
    upper: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    grant: u32,
) -> Result<OwnedFd, EntryError> {
    match at::open(upper, name, flags) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            let p = at::open(upper, name, libc::O_PATH)?;
            let mode = at::fstat(p.as_fd())?.st_mode & 0o7777;
            at::chmod(p.as_fd(), mode | grant).map_err(step("read the change layer"))?;
            Ok(at::open(upper, name, flags)?)
        }
        r => Ok(r?),
    }
}

/// Whether the host file `name` holds exactly what `src` holds (same size checked before).
fn same_content(src: &OwnedFd, host: BorrowedFd<'_>, name: &CStr) -> Result<bool, EntryError> {
    let Ok(h) = at::open(host, name, libc::O_RDONLY) else {
        return Ok(false);
    };
    if !at::is_file(&at::fstat(h.as_fd())?) {
        return Ok(false);
    }
    let a = std::fs::File::from(src.try_clone()?);
    let b = std::fs::File::from(h);
    let (mut x, mut y) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    let mut offset = 0u64;
    loop {
        let n = read_full(&a, &mut x, offset)?;
        let m = read_full(&b, &mut y, offset)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
        offset += n as u64;
    }
}

/// Reads from `offset` until `buf` is full or the file ends.
fn read_full(f: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        let n = f.read_at(&mut buf[got..], offset + got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

/// Copies the layer's file into the new host file `out` and gives it the layer's mode (without
/// set-ID bits) and times; returns the bytes copied.
fn copy(src: &OwnedFd, out: OwnedFd, st: &libc::stat) -> Result<u64, EntryError> {
    use std::os::unix::fs::FileExt;
    let a = std::fs::File::from(src.try_clone()?);
    let mut out = std::fs::File::from(out);
    let mut buf = vec![0u8; 256 << 10];
    let mut offset = 0u64;
    loop {
        let n = a
            .read_at(&mut buf, offset)
            .map_err(step("read the change layer"))?;
        if n == 0 {
            break;
        }
        std::io::Write::write_all(&mut out, &buf[..n]).map_err(step("write"))?;
        offset += n as u64;
    }
    at::chmod(out.as_fd(), safe_mode(st)).map_err(step("set mode"))?;
    at::set_times(out.as_fd(), st).map_err(step("set times"))?;
    Ok(offset)
}

/// Puts the new entry `tmp` in place of `name` (removing a directory there first).
fn replace(
    host: BorrowedFd<'_>,
    tmp: &CStr,
    name: &CStr,
    existing: Option<&libc::stat>,
) -> Result<(), EntryError> {
    if existing.is_some_and(at::is_dir) {
        remove(host, name, 0).map_err(step("remove the directory it replaces"))?;
    }
    at::rename(host, tmp, name).map_err(step("put in place"))?;
    Ok(())
}

static TEMP: AtomicU32 = AtomicU32::new(0);

/// Puts the prepared temporary entry `tmp` in place of `name` (see [`replace`]); when preparing
/// it failed, or the replacement does, removes `tmp` instead, so no temporary is left behind.
fn place<T>(
    host: BorrowedFd<'_>,
    tmp: &CStr,
    name: &CStr,
    existing: Option<&libc::stat>,
    prepared: Result<T, EntryError>,
) -> Result<T, EntryError> {
    let placed = prepared.and_then(|v| replace(host, tmp, name, existing).map(|()| v));
    if placed.is_err() {
        let _ = at::unlink(host, tmp, false);
    }
    placed
}

fn temp_name() -> CString {
    let n = TEMP.fetch_add(1, Ordering::Relaxed);
    // Digits and letters only: never a NUL byte.
    CString::new(format!(".airlock-apply-{}-{n}", std::process::id())).unwrap_or_default()
}

/// A new empty file in `host` (never one that existed), and its name.
fn temp_file(host: BorrowedFd<'_>) -> Result<(CString, OwnedFd), EntryError> {
    let mut last = None;
    for _ in 0..8 {
        let name = temp_name();
        match at::create(host, &name) {
            Ok(fd) => return Ok((name, fd)),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => last = Some(e),
            Err(e) => return Err(step("create file")(e)),
        }
    }
    Err(step("create file")(last.unwrap_or_else(|| {
        io::Error::from_raw_os_error(libc::EEXIST)
    })))
}

/// Removes `name` from the host directory `dir`, a directory with everything in it (never
/// following a symlink); `false` if nothing was there.
fn remove(dir: BorrowedFd<'_>, name: &CStr, depth: usize) -> io::Result<bool> {
    let Some(st) = at::stat(dir, name)? else {
        return Ok(false);
    };
    if !at::is_dir(&st) {
        at::unlink(dir, name, false)?;
        return Ok(true);
    }
    if depth >= MAX_DEPTH {
        return Err(io::Error::other(format!(
            "nested deeper than {MAX_DEPTH} directories"
        )));
    }
    let sub = at::open_dir_path(dir, name)?;
    for child in at::list(sub.as_fd())? {
        remove(sub.as_fd(), &child, depth + 1)?;
    }
    at::unlink(dir, name, true)?;
    Ok(true)
}
