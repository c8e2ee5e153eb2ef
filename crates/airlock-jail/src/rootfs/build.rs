//! Building a planned root inside the box's first process (single-threaded, after clone and
//! before exec), and entering it with pivot_root.

use super::cover::{cover_path, pin_path, Finder};
use super::plan::{CHANGES_DIR, EMPTY_DIR, EMPTY_FILE, EXTENDED_DIR, PROC_MASKED, PROC_READ_ONLY};
use super::template_root::{make_real_path, template_root, Lower, RealPaths};
use super::{FsOp, NodeKind, RootBase, RootfsError, RootfsPlan};
use crate::mount_attr::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use crate::sys::{cstring, cvt, cvt_long};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) fn ctx<'a>(
    step: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> RootfsError + 'a {
    move |source| RootfsError {
        step,
        path: path.to_path_buf(),
        source,
    }
}

fn c(path: &Path) -> io::Result<CString> {
    cstring(path.as_os_str().as_bytes())
}

pub(super) fn mount(
    src: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let src = src.map(c).transpose()?;
    let target = c(target)?;
    let fstype = fstype.map(cstring).transpose()?;
    let data = data.map(cstring).transpose()?;
    let ptr = |o: &Option<CString>| o.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: every pointer is either null or a valid NUL-terminated string living across the call.
    cvt(unsafe {
        libc::mount(
            ptr(&src),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    })?;
    Ok(())
}

/// Sets mount attributes on `path` (and every mount below it when `recursive`).
pub(super) fn set_attr(path: &Path, set: u64, recursive: bool) -> io::Result<()> {
    let p = c(path)?;
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    crate::mount_attr::set(libc::AT_FDCWD, &p, flags, set, None)
}

pub(super) fn open_path(path: &Path, nofollow: bool) -> io::Result<libc::c_int> {
    let p = c(path)?;
    let flags = libc::O_PATH | libc::O_CLOEXEC | if nofollow { libc::O_NOFOLLOW } else { 0 };
    // SAFETY: p is a valid C string.
    cvt(unsafe { libc::open(p.as_ptr(), flags) })
}

pub(super) fn fd_path(fd: libc::c_int) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

pub(super) fn mkdir_all(path: &Path, mode: u32) -> io::Result<()> {
    let p = c(path)?;
    // SAFETY: p is a valid C string.
    if unsafe { libc::mkdir(p.as_ptr(), mode) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EEXIST) => Ok(()),
        Some(libc::ENOENT) => {
            if let Some(parent) = path.parent().filter(|p| *p != path) {
                mkdir_all(parent, 0o755)?;
            }
            // SAFETY: p is a valid C string.
            if unsafe { libc::mkdir(p.as_ptr(), mode) } == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EEXIST) {
                Ok(())
            } else {
                Err(err)
            }
        }
        _ => Err(err),
    }
}

fn touch(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        mkdir_all(parent, 0o755)?;
    }
    let p = c(path)?;
    // Never opens what is already there: under a writable grant that may be a FIFO the box made
    // in an earlier run (opening it would block until a reader came, forever) or a device.
    let flags = libc::O_CREAT
        | libc::O_EXCL
        | libc::O_WRONLY
        | libc::O_NONBLOCK
        | libc::O_CLOEXEC
        | libc::O_NOFOLLOW;
    // SAFETY: p is a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), flags, 0o644) };
    if fd == -1 {
        let err = io::Error::last_os_error();
        // A mount point that already exists (e.g. the same path in a read-only bind) is fine.
        if err.raw_os_error() == Some(libc::EEXIST) || path.exists() {
            return Ok(());
        }
        return Err(err);
    }
    crate::sys::close(fd);
    Ok(())
}

fn under(root: &Path, inside: &Path) -> PathBuf {
    root.join(inside.strip_prefix("/").unwrap_or(inside))
}

/// Builds the root described by `plan` and pivots into it. Must run in a fresh mount namespace
/// owned by the caller's user namespace, in the box's init process. `console`, when given, is the
/// box's terminal (a pty slave from the host): it appears as `/dev/console`, so `tty` and
/// `ttyname()` inside find it. Returns a descriptor of the workspace's change layer (the
/// overlay's upper directory) when the plan has one: it keeps the layer alive after the box's
/// mount namespace is gone.
pub fn enter(
    plan: &RootfsPlan,
    console: Option<libc::c_int>,
    premade: &[(PathBuf, libc::c_int)],
) -> Result<Option<libc::c_int>, RootfsError> {
    let slash = Path::new("/");
    mount(None, slash, None, libc::MS_REC | libc::MS_PRIVATE, None)
        .map_err(ctx("make private", slash))?;

    // Open every host source before anything is mounted over it.
    let mut sources: Vec<Option<libc::c_int>> = Vec::with_capacity(plan.ops.len());
    let premade_for = |target: &Path| premade.iter().find(|(t, _)| t == target).map(|(_, fd)| *fd);
    for op in &plan.ops {
        let fd = match op {
            FsOp::Bind { target, .. } if premade_for(target).is_some() => None,
            FsOp::Bind {
                source, optional, ..
            } => match open_path(source, false) {
                Ok(fd) => Some(fd),
                Err(_) if *optional => None,
                Err(e) => return Err(ctx("open source", source)(e)),
            },
            _ => None,
        };
        sources.push(fd);
    }

    // A template's tree, opened (or taken premade, idmapped) before anything is mounted.
    let lower = match &plan.base {
        RootBase::Tmpfs => None,
        RootBase::Template { lower, .. } => Some(match premade_for(lower) {
            Some(fd) => Lower::Premade(fd),
            None => Lower::Opened(open_path(lower, false).map_err(ctx("open template", lower))?),
        }),
    };
    let kept_layer = match &plan.base {
        RootBase::Template {
            keep_layer: Some(dir),
            ..
        } => Some(open_path(dir, true).map_err(ctx("open the kept layer", dir))?),
        _ => None,
    };
    let on_template = lower.is_some();
    let (root, scratch) = match lower {
        None => host_root(plan)?,
        Some(lower) => template_root(plan, lower, kept_layer)?,
    };
    let root = root.as_path();
    let scratch = scratch.as_path();

    let mut known = RealPaths::default();
    for (op, src) in plan.ops.iter().zip(&sources) {
        if on_template {
            make_real_path(root, op, &mut known)?;
        }
        match op {
            FsOp::Bind { target, kind, .. } if premade_for(target).is_some() => {
                let t = under(root, target);
                match kind {
                    NodeKind::Dir => mkdir_all(&t, 0o755).map_err(ctx("mkdir", &t))?,
                    NodeKind::File => touch(&t).map_err(ctx("create mount point", &t))?,
                }
                let fd = premade_for(target).unwrap_or(-1);
                crate::idmap::attach(fd, &t).map_err(ctx("attach idmapped mount", target))?;
                crate::sys::close(fd);
            }
            _ => run_op(op, *src, root, scratch)?,
        }
        known.forget(&under(root, op.place()));
    }
    for fd in sources.into_iter().flatten() {
        crate::sys::close(fd);
    }
    if let Some(fd) = console {
        let t = under(root, Path::new("/dev/console"));
        touch(&t).map_err(ctx("create mount point", &t))?;
        // The descriptor belongs to the caller's mount namespace; bind its path as seen here.
        let src = std::fs::read_link(fd_path(fd)).map_err(ctx("find console", &t))?;
        mount(Some(&src), &t, None, libc::MS_BIND, None).map_err(ctx("bind console", &src))?;
    }
    let changes = match plan.changes_layer() {
        Some(_) => {
            let upper = scratch.join(CHANGES_DIR).join("upper");
            Some(open_dir(&upper).map_err(ctx("open change layer", &upper))?)
        }
        None => None,
    };
    if !on_template {
        fit_to_disk_cap(root, plan.scratch_size)?;
    }

    pivot(root)?;
    after_pivot(plan, on_template)?;
    Ok(changes)
}

/// Where a `host` root keeps the box's scratch (covered once the root is built).
const SCRATCH_DIR: &str = "/.airlock/scratch";

/// Room for the `host` root's own files (its /etc copies, mount points, placeholders) while it
/// is built; [`fit_to_disk_cap`] then takes back what they did not use.
const ROOT_ROOM: u64 = 4 << 20;

/// The `host` root: a tmpfs on the host's /tmp of this private namespace (sources were opened
/// already, so nothing under /tmp is lost), later read-only, that also holds the box's scratch
/// (its /tmp, home, /dev/shm and change layer, seen through writable binds of directories under
/// `/.airlock/scratch`). One tmpfs, not two: every superblock costs every memory cgroup on the
/// machine a shrinker slot, so a box's superblocks cost N boxes N² (BENCHMARKS.md, "Idle
/// density"). Returns (root, scratch).
fn host_root(plan: &RootfsPlan) -> Result<(PathBuf, PathBuf), RootfsError> {
    let root = Path::new("/tmp");
    let opts = format!(
        "size={},mode=0755",
        plan.scratch_size.saturating_add(ROOT_ROOM)
    );
    mount(
        Some(Path::new("airlock-root")),
        root,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&opts),
    )
    .map_err(ctx("mount root tmpfs", root))?;
    let scratch = under(root, Path::new(SCRATCH_DIR));
    mkdir_all(&scratch, 0o700).map_err(ctx("mkdir", &scratch))?;
    Ok((root.to_path_buf(), scratch))
}

/// Shrinks the built `host` root's tmpfs to what its own files use plus the box's disk cap, so
/// the box can write exactly `cap` bytes into its scratch, as when the scratch had a tmpfs of
/// its own.
fn fit_to_disk_cap(root: &Path, cap: u64) -> Result<(), RootfsError> {
    let r = c(root).map_err(ctx("size the root tmpfs", root))?;
    // SAFETY: st is plain old data for statfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: r is a valid C string and st a valid statfs buffer.
    cvt(unsafe { libc::statfs(r.as_ptr(), &mut st) }).map_err(ctx("statfs root tmpfs", root))?;
    let block = u64::try_from(st.f_bsize).unwrap_or(4096);
    let used = st.f_blocks.saturating_sub(st.f_bfree).saturating_mul(block);
    let opts = format!("size={}", cap.saturating_add(used));
    mount(
        None,
        root,
        None,
        libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV,
        Some(&opts),
    )
    .map_err(ctx("size the root tmpfs to the disk cap", root))
}

/// A template box's scratch tmpfs (its /tmp, home, /dev/shm, change layer and root layer),
/// capped at the policy's disk size. (A `host` box's scratch is part of its root tmpfs.)
pub(super) fn mount_scratch(plan: &RootfsPlan, scratch: &Path) -> Result<(), RootfsError> {
    let scratch_opts = format!("size={},mode=0755", plan.scratch_size);
    mount(
        Some(Path::new("airlock-scratch")),
        scratch,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&scratch_opts),
    )
    .map_err(ctx("mount scratch tmpfs", scratch))
}

fn open_dir(path: &Path) -> io::Result<libc::c_int> {
    let p = c(path)?;
    // SAFETY: p is a valid C string.
    cvt(unsafe {
        libc::open(
            p.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// Mounts the change layer over the workspace already bound (read-only) at `t`: the bound
/// workspace is the lower layer, the upper and work directories live on the scratch tmpfs.
fn overlay(t: &Path, target: &Path, scratch: &Path) -> Result<(), RootfsError> {
    let layer = scratch.join(CHANGES_DIR);
    let (upper, work) = (layer.join("upper"), layer.join("work"));
    mkdir_all(&upper, 0o755).map_err(ctx("mkdir", &upper))?;
    mkdir_all(&work, 0o700).map_err(ctx("mkdir", &work))?;
    // The lower layer through a descriptor: the workspace's path may hold characters (`,`,
    // `:`) that overlay's options give a meaning.
    let lower = open_path(t, true).map_err(ctx("open workspace", target))?;
    // SAFETY: st is plain old data for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: lower is a valid descriptor and st a valid stat buffer.
    let res = cvt(unsafe { libc::fstat(lower, &mut st) })
        .map_err(ctx("stat workspace", target))
        .and_then(|_| {
            // The merged root shows the upper directory's mode: keep the workspace's own.
            std::fs::set_permissions(
                &upper,
                std::os::unix::fs::PermissionsExt::from_mode(st.st_mode & 0o1777),
            )
            .map_err(ctx("chmod", &upper))?;
            let opts = format!(
                "lowerdir={},upperdir={},workdir={},userxattr,metacopy=off,index=off,xino=off",
                fd_path(lower).display(),
                upper.display(),
                work.display()
            );
            mount(
                Some(Path::new("airlock-changes")),
                t,
                Some("overlay"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(&opts),
            )
            .map_err(ctx("mount change layer (overlayfs) over workspace", target))
        });
    crate::sys::close(lower);
    res
}

/// The largest file a [`FsOp::Copy`] copies into the box's root (`/etc`'s `mime.types`,
/// `matplotlibrc`, `ld.so.cache` and `services` are larger: ~180 KiB a box on Debian).
const COPY_AT_MOST: u64 = 8 << 10;

fn run_op(
    op: &FsOp,
    src: Option<libc::c_int>,
    root: &Path,
    scratch: &Path,
) -> Result<(), RootfsError> {
    match op {
        FsOp::Bind {
            target,
            writable,
            kind,
            ..
        } => {
            let Some(fd) = src else { return Ok(()) };
            let t = under(root, target);
            match kind {
                NodeKind::Dir => mkdir_all(&t, 0o755).map_err(ctx("mkdir", &t))?,
                NodeKind::File => touch(&t).map_err(ctx("create mount point", &t))?,
            }
            mount(
                Some(&fd_path(fd)),
                &t,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            )
            .map_err(ctx("bind", target))?;
            let mut attrs = MOUNT_ATTR_NOSUID;
            if !writable {
                attrs |= MOUNT_ATTR_RDONLY;
            }
            if !target.starts_with("/dev") {
                attrs |= MOUNT_ATTR_NODEV;
            }
            set_attr(&t, attrs, true).map_err(ctx("restrict mount", target))?;
        }
        FsOp::Copy { source, target } => {
            // A larger file is bound read-only instead (the box sees the same content, read-only
            // either way): its pages are then the host's page cache, shared by every box, not a
            // copy in each box's memory. A copy is cheaper than a mount for the small ones.
            if std::fs::symlink_metadata(source)
                .is_ok_and(|m| m.is_file() && m.len() > COPY_AT_MOST)
            {
                let fd = open_path(source, true).map_err(ctx("open", source))?;
                let bound = FsOp::Bind {
                    source: source.clone(),
                    target: target.clone(),
                    writable: false,
                    kind: NodeKind::File,
                    optional: false,
                };
                let res = run_op(&bound, Some(fd), root, scratch);
                crate::sys::close(fd);
                return res;
            }
            let data = match std::fs::read(source) {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(ctx("read", source)(e)),
            };
            let t = under(root, target);
            std::fs::write(&t, data).map_err(ctx("write", target))?;
        }
        FsOp::Symlink { link, target } => {
            let l = under(root, link);
            if let Some(parent) = l.parent() {
                mkdir_all(parent, 0o755).map_err(ctx("mkdir", parent))?;
            }
            std::os::unix::fs::symlink(target, &l).map_err(ctx("symlink", link))?;
        }
        FsOp::Dir { target, mode } => {
            let t = under(root, target);
            mkdir_all(&t, 0o755).map_err(ctx("mkdir", target))?;
            std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(*mode))
                .map_err(ctx("chmod", target))?;
        }
        FsOp::File { target, contents } => {
            let t = under(root, target);
            if let Some(parent) = t.parent() {
                mkdir_all(parent, 0o755).map_err(ctx("mkdir", parent))?;
            }
            std::fs::write(&t, contents).map_err(ctx("write", target))?;
        }
        FsOp::ExtendFile { target, append } => {
            let t = under(root, target);
            let mut data = match std::fs::read(&t) {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(ctx("read", target)(e)),
            };
            if !data.is_empty() && !data.ends_with(b"\n") {
                data.push(b'\n');
            }
            data.extend_from_slice(append.as_bytes());
            // The new content lives in the root's own private directory, bound over the
            // target (which may sit in a read-only bind of the host's).
            let name = target.to_string_lossy().replace('/', "_");
            let copy = under(root, &Path::new(EXTENDED_DIR).join(name));
            if let Some(parent) = copy.parent() {
                mkdir_all(parent, 0o755).map_err(ctx("mkdir", parent))?;
            }
            std::fs::write(&copy, data).map_err(ctx("write", &copy))?;
            touch(&t).map_err(ctx("create mount point", target))?;
            mount(Some(&copy), &t, None, libc::MS_BIND, None).map_err(ctx("bind", target))?;
            set_attr(
                &t,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                false,
            )
            .map_err(ctx("restrict mount", target))?;
        }
        FsOp::Tmpfs { target, size, mode } => {
            let t = under(root, target);
            mkdir_all(&t, 0o755).map_err(ctx("mkdir", target))?;
            let opts = format!("size={size},mode={mode:o}");
            mount(
                Some(Path::new("tmpfs")),
                &t,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some(&opts),
            )
            .map_err(ctx("mount tmpfs", target))?;
        }
        FsOp::Scratch { sub, target } => {
            let s = scratch.join(sub);
            mkdir_all(&s, 0o755).map_err(ctx("mkdir", &s))?;
            let mode = match sub.as_str() {
                "home" => 0o755,
                "root" => 0o700,
                _ => 0o1777,
            };
            std::fs::set_permissions(&s, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .map_err(ctx("chmod", &s))?;
            let t = under(root, target);
            mkdir_all(&t, 0o755).map_err(ctx("mkdir", target))?;
            mount(Some(&s), &t, None, libc::MS_BIND, None).map_err(ctx("bind scratch", target))?;
        }
        FsOp::Proc { target } => {
            let t = under(root, target);
            mkdir_all(&t, 0o555).map_err(ctx("mkdir", target))?;
            mount(
                Some(Path::new("proc")),
                &t,
                Some("proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            )
            .map_err(ctx("mount proc", target))?;
        }
        FsOp::Overlay { target } => overlay(&under(root, target), target, scratch)?,
        // Made so by `make_real_path` on a template root; a fresh root has nothing there.
        FsOp::Absent { .. } => {}
        FsOp::Devpts { target } => {
            let t = under(root, target);
            mkdir_all(&t, 0o755).map_err(ctx("mkdir", target))?;
            mount(
                Some(Path::new("devpts")),
                &t,
                Some("devpts"),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some("newinstance,ptmxmode=0666,mode=620"),
            )
            .map_err(ctx("mount devpts", target))?;
        }
    }
    Ok(())
}

fn pivot(root: &Path) -> Result<(), RootfsError> {
    let r = c(root).map_err(ctx("pivot_root", root))?;
    let dot = cstring(".").map_err(ctx("pivot_root", root))?;
    let slash = cstring("/").map_err(ctx("pivot_root", root))?;
    // SAFETY: r is a valid C string.
    cvt(unsafe { libc::chdir(r.as_ptr()) }).map_err(ctx("chdir", root))?;
    // pivot_root(".", ".") stacks the old root under the new one; detaching "." then drops it.
    // SAFETY: dot is a valid C string.
    cvt_long(unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) })
        .map_err(ctx("pivot_root", root))?;
    // SAFETY: dot is a valid C string.
    cvt(unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) })
        .map_err(ctx("detach old root", root))?;
    // SAFETY: slash is a valid C string.
    cvt(unsafe { libc::chdir(slash.as_ptr()) }).map_err(ctx("chdir", Path::new("/")))?;
    Ok(())
}

fn after_pivot(plan: &RootfsPlan, on_template: bool) -> Result<(), RootfsError> {
    let inside = Finder::InBox;
    // Pins first: a self-bind made after the covers would hide them.
    for pin in &plan.pins {
        pin_path(&inside, pin)?;
    }
    for cover in &plan.covers {
        cover_path(&inside, cover)?;
    }
    for name in PROC_MASKED {
        let p = Path::new("/proc").join(name);
        if p.exists() {
            mount(Some(Path::new(EMPTY_FILE)), &p, None, libc::MS_BIND, None)
                .map_err(ctx("mask", &p))?;
            set_attr(
                &p,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                false,
            )
            .map_err(ctx("mask", &p))?;
        }
    }
    for name in PROC_READ_ONLY {
        let p = Path::new("/proc").join(name);
        if p.is_dir() {
            mount(Some(&p), &p, None, libc::MS_BIND | libc::MS_REC, None)
                .map_err(ctx("bind", &p))?;
            set_attr(
                &p,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                true,
            )
            .map_err(ctx("read-only", &p))?;
        }
    }
    if on_template {
        // The root is the box's own writable layer; only airlock's placeholders stay fixed.
        let own = Path::new("/.airlock");
        mount(Some(own), own, None, libc::MS_BIND | libc::MS_REC, None)
            .map_err(ctx("bind", own))?;
        set_attr(
            own,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            true,
        )
        .map_err(ctx("read-only", own))?;
        return Ok(());
    }
    // The scratch's own directory: the box reaches its files through their views (/tmp, home,
    // /dev/shm), never through the root's path to them.
    let scratch = Path::new(SCRATCH_DIR);
    mount(
        Some(Path::new(EMPTY_DIR)),
        scratch,
        None,
        libc::MS_BIND,
        None,
    )
    .map_err(ctx("cover", scratch))?;
    set_attr(
        scratch,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        false,
    )
    .map_err(ctx("cover", scratch))?;
    let slash = Path::new("/");
    set_attr(
        slash,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        false,
    )
    .map_err(ctx("read-only root", slash))?;
    Ok(())
}
