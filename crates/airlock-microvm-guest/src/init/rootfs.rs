//! Builds the box's root at [`NEW_ROOT`] from the host's config: the template read-only, a
//! capped writable layer, a fresh `/dev` with only harmless nodes, `/proc`, `/tmp` and home,
//! the shares, the protected and denied paths. Nothing of the initramfs (the agent's port, the
//! modules, the disk devices) is reachable from inside it.

use super::sys::{bind, mkdir_all, mount, write_file, Result};
use crate::config::{GuestConfig, GuestRoot, TRUST_BUNDLE};
use std::path::Path;

/// Where the agent appears inside the box (a read-only bind of the initramfs's copy: the
/// template's root need not hold one, nor a libc for it).
pub const AGENT_INSIDE: &str = "/.airlock/agent";
/// The agent in the initramfs.
const AGENT: &str = "/airlock-agent";

/// Where the box's root is built (the agent is chrooted into it).
pub const NEW_ROOT: &str = "/newroot";
/// The read-only image and the writable layer of an image root.
const LOWER: &str = "/lower";
const UPPER: &str = "/scratch/layer";
/// The box's capped scratch tmpfs (outside its root).
const SCRATCH: &str = "/scratch";

/// Device nodes made in the box's `/dev`: (name, char major, minor).
const DEV_NODES: &[(&str, u32, u32)] = &[
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

fn r(path: &str) -> String {
    format!("{NEW_ROOT}{path}")
}

fn tmpfs(target: &str, bytes: u64, mode: &str) -> Result<()> {
    mkdir_all(target)?;
    let data = format!("size={bytes},mode={mode}");
    mount(
        "tmpfs",
        target,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&data),
    )
}

/// Builds the whole root.
pub fn build(cfg: &GuestConfig) -> Result<()> {
    // One capped tmpfs holds everything the box writes outside its shares (as the native
    // box's scratch): the root's writable layer, /tmp, home and /dev/shm share its cap.
    tmpfs(SCRATCH, cfg.disk_bytes, "0755")?;
    for (dir, mode) in [
        ("layer", 0o755),
        ("tmp", 0o1777),
        ("home", 0o755),
        ("shm", 0o1777),
        ("root", 0o700),
    ] {
        let p = format!("{SCRATCH}/{dir}");
        mkdir_all(&p)?;
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(super::sys::io_err(format!("cannot set the mode of {p}")))?;
    }
    match &cfg.root {
        GuestRoot::Host { links } => host_root(cfg, links)?,
        GuestRoot::Disk { fstype } => disk_root(cfg, fstype)?,
    }
    if matches!(cfg.root, GuestRoot::Disk { .. }) {
        // The host stages a host root's /etc with these files; an image's own /etc gets them.
        identity(cfg)?;
    }
    write_file(&r(AGENT_INSIDE), b"")?;
    bind(AGENT, &r(AGENT_INSIDE), true)?;
    devices()?;
    proc_fs()?;
    for (dir, at) in [
        ("tmp", "/tmp"),
        ("home", cfg.home.as_str()),
        ("shm", "/dev/shm"),
    ] {
        mkdir_all(&r(at))?;
        bind(&format!("{SCRATCH}/{dir}"), &r(at), false)?;
    }
    chown(&r(&cfg.home), cfg.uid, cfg.gid)?;
    if cfg.box_root && matches!(cfg.root, GuestRoot::Host { .. }) {
        // The box's root gets a home of its own, as in a native box on the host template (an
        // image has its own /root, which is the box user's as all its files are).
        mkdir_all(&r("/root"))?;
        bind(&format!("{SCRATCH}/root"), &r("/root"), false)?;
        chown(&r("/root"), cfg.uid, cfg.gid)?;
    }
    attach_shares(cfg, &[])?;
    if let Some(ca) = &cfg.trust_ca {
        trust(cfg, ca)?;
    }
    for path in &cfg.deny {
        if !under_share(cfg, path) {
            hide(&r(path))?;
        }
    }
    if matches!(cfg.root, GuestRoot::Host { .. }) {
        // The host root's own tmpfs (its links, mount points and /etc) becomes read-only.
        let flags = libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        mount("tmpfs", NEW_ROOT, "tmpfs", flags, None)?;
    }
    Ok(())
}

/// The host template's system shares: (tag, where).
const SYSTEM_SHARES: [(&str, &str); 2] = [("usr", "/usr"), ("etc", "/etc")];

/// Whether `path` (inside) is at or under one of the box's 9p mounts.
fn under_share(cfg: &GuestConfig, path: &str) -> bool {
    let system = matches!(cfg.root, GuestRoot::Host { .. });
    let mut ats: Vec<&str> = cfg.shares.iter().map(|s| s.inside.as_str()).collect();
    if system {
        ats.extend(SYSTEM_SHARES.iter().map(|(_, at)| *at));
    }
    ats.iter().any(|at| is_under(path, at))
}

fn is_under(path: &str, at: &str) -> bool {
    let at = at.trim_end_matches('/');
    path == at || path.starts_with(&format!("{at}/"))
}

/// Mounts the box's 9p shares (the host template's system shares first) and what covers parts
/// of them (protected paths read-only, denied paths hidden). Mount points listed in `present`
/// (inside the box's root, still mounted) are left as they are, so a failed detach can be
/// undone by attaching again.
pub fn attach_shares(cfg: &GuestConfig, present: &[String]) -> Result<()> {
    let here = |target: &str| present.iter().any(|p| p == target);
    if matches!(cfg.root, GuestRoot::Host { .. }) {
        let opts = "trans=virtio,version=9p2000.L,msize=262144,cache=loose";
        for (tag, at) in SYSTEM_SHARES {
            if here(&r(at)) {
                continue;
            }
            mkdir_all(&r(at))?;
            mount(
                tag,
                &r(at),
                "9p",
                libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID,
                Some(opts),
            )?;
        }
    }
    for share in &cfg.shares {
        let target = r(&share.inside);
        if here(&target) {
            continue;
        }
        mkdir_all(&target)?;
        let flags =
            libc::MS_NOSUID | libc::MS_NODEV | if share.read_only { libc::MS_RDONLY } else { 0 };
        mount(
            &share.tag,
            &target,
            "9p",
            flags,
            Some("trans=virtio,version=9p2000.L,msize=262144,cache=none"),
        )?;
    }
    for path in &cfg.protect {
        let target = r(path);
        if !here(&target) && Path::new(&target).exists() {
            bind(&target, &target, true)?;
        }
    }
    for path in cfg.deny.iter().filter(|p| under_share(cfg, p)) {
        if !here(&r(path)) {
            hide(&r(path))?;
        }
    }
    Ok(())
}

/// Unmounts every 9p share of the box and everything mounted on or inside them, deepest and
/// latest first (QEMU cannot save a VM while a 9p export is attached). Fails when a process
/// of the box holds a file or its working directory there; what is still mounted is then
/// attached again, so the box runs on as before.
pub fn detach_shares(cfg: &GuestConfig) -> Result<()> {
    let mounts = mountinfo()?;
    let shares: Vec<&String> = mounts
        .iter()
        .filter(|(at, fs)| fs == "9p" && is_under(at, NEW_ROOT))
        .map(|(at, _)| at)
        .collect();
    let doomed: Vec<&String> = mounts
        .iter()
        .map(|(at, _)| at)
        .filter(|at| shares.iter().any(|s| is_under(at, s)))
        .collect();
    for at in doomed.iter().rev() {
        let p = super::sys::cstr(at)?;
        // SAFETY: a valid path.
        if unsafe { libc::umount2(p.as_ptr(), 0) } == -1 {
            let source = std::io::Error::last_os_error();
            attach_shares(cfg, &mounted())?;
            let inside = at.strip_prefix(NEW_ROOT).unwrap_or(at);
            return Err(super::sys::InitError {
                what: format!(
                    "cannot detach {inside} for the checkpoint: a process of the box has a file or its working directory there (end it, or leave the directory, and try again)"
                ),
                source,
            });
        }
    }
    Ok(())
}

/// Every mount point in the guest (unescaped), in mount order.
pub fn mounted() -> Vec<String> {
    mountinfo()
        .map(|m| m.into_iter().map(|(at, _)| at).collect())
        .unwrap_or_default()
}

/// The mount points (unescaped) and filesystem types of `/proc/self/mountinfo`, in mount order.
fn mountinfo() -> Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(super::sys::io_err("cannot read the mount table"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let at = line.split(' ').nth(4)?;
            let fs = line.split(" - ").nth(1)?.split(' ').next()?;
            Some((unescape(at), fs.to_string()))
        })
        .collect())
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let d = |k: usize| u16::from(b[i + k] - b'0');
            if let Ok(n) = u8::try_from(d(1) * 64 + d(2) * 8 + d(3)) {
                out.push(n);
                i += 4;
                continue;
            }
            out.push(b[i]);
            i += 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn host_root(cfg: &GuestConfig, links: &[(String, String)]) -> Result<()> {
    tmpfs(NEW_ROOT, cfg.disk_bytes, "0755")?;
    for (link, target) in links {
        std::os::unix::fs::symlink(target, r(link)).map_err(super::sys::io_err(format!(
            "cannot link {link} to {target}"
        )))?;
    }
    Ok(())
}

fn disk_root(cfg: &GuestConfig, fstype: &str) -> Result<()> {
    mkdir_all(LOWER)?;
    mount(
        "/dev/vda",
        LOWER,
        fstype,
        libc::MS_RDONLY | libc::MS_NODEV,
        None,
    )?;
    mkdir_all(&format!("{UPPER}/data"))?;
    // The merged root's own directory is the upper's: the box user's, as the image's files are.
    chown(&format!("{UPPER}/data"), cfg.uid, cfg.gid)?;
    mkdir_all(&format!("{UPPER}/work"))?;
    mkdir_all(NEW_ROOT)?;
    let data = format!("lowerdir={LOWER},upperdir={UPPER}/data,workdir={UPPER}/work");
    mount("overlay", NEW_ROOT, "overlay", libc::MS_NODEV, Some(&data))
}

/// The root's CA bundle with `ca` appended, bound read-only over the bundle: the copy lives in
/// the scratch tmpfs outside the root, so the box can neither change it nor remove the bind.
fn trust(cfg: &GuestConfig, ca: &str) -> Result<()> {
    let target = r(TRUST_BUNDLE);
    let mut bundle = match std::fs::read(&target) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if matches!(cfg.root, GuestRoot::Host { .. }) {
                return Err(super::sys::InitError {
                    what: format!(
                        "the host has no CA bundle at {TRUST_BUNDLE} for the box's secrets (install ca-certificates)"
                    ),
                    source: e,
                });
            }
            // An image without one: the bind needs a file to cover (on the writable layer).
            write_file(&target, b"")?;
            Vec::new()
        }
        Err(e) => {
            return Err(super::sys::io_err(format!(
                "cannot read the root's CA bundle {TRUST_BUNDLE}"
            ))(e))
        }
    };
    if !bundle.is_empty() && !bundle.ends_with(b"\n") {
        bundle.push(b'\n');
    }
    bundle.extend_from_slice(ca.as_bytes());
    let copy = format!("{SCRATCH}/trust-bundle.crt");
    write_file(&copy, &bundle)?;
    bind(&copy, &target, true)
}

/// `/etc/passwd`, group, hosts and hostname: the box user and nothing of the host's users.
fn identity(cfg: &GuestConfig) -> Result<()> {
    let mut passwd = format!(
        "{}:x:{}:{}:{}:{}:/bin/bash\n",
        cfg.user, cfg.uid, cfg.gid, cfg.user, cfg.home
    );
    if cfg.uid != 0 {
        passwd.push_str("root:x:0:0:root:/root:/usr/sbin/nologin\n");
    }
    passwd.push_str("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    let mut group = format!("{}:x:{}:\n", cfg.user, cfg.gid);
    if cfg.gid != 0 {
        group.push_str("root:x:0:\n");
    }
    group.push_str("nogroup:x:65534:\n");
    let hosts = "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n";
    let files: [(&str, &[u8]); 4] = [
        ("/etc/passwd", passwd.as_bytes()),
        ("/etc/group", group.as_bytes()),
        ("/etc/hosts", hosts.as_bytes()),
        ("/etc/hostname", b"airlock\n"),
    ];
    for (path, data) in files {
        let _ = std::fs::remove_file(r(path));
        write_file(&r(path), data)?;
    }
    Ok(())
}

/// The box's `/proc`: only the box user's own processes are visible in it (hidepid: not the
/// init, the kernel's threads or anything else the guest runs as root), and the entries the
/// native box masks or keeps read-only are masked or read-only here too (the same list).
fn proc_fs() -> Result<()> {
    let at = r("/proc");
    mkdir_all(&at)?;
    mount(
        "proc",
        &at,
        "proc",
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        Some("hidepid=invisible"),
    )?;
    write_file("/proc-empty", b"")?;
    for name in airlock_jail::rootfs::PROC_MASKED {
        let p = format!("{at}/{name}");
        if Path::new(&p).exists() {
            bind("/proc-empty", &p, true)?;
        }
    }
    for name in airlock_jail::rootfs::PROC_READ_ONLY {
        let p = format!("{at}/{name}");
        if Path::new(&p).is_dir() {
            bind(&p, &p, true)?;
        }
    }
    Ok(())
}

fn devices() -> Result<()> {
    let dev = r("/dev");
    // Not nodev: its few nodes must open. Nothing else can be made here (no CAP_MKNOD).
    mkdir_all(&dev)?;
    mount(
        "tmpfs",
        &dev,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("size=1m,mode=0755"),
    )?;
    for (name, major, minor) in DEV_NODES {
        let path = super::sys::cstr(&format!("{dev}/{name}"))?;
        // SAFETY: a valid path; makedev of small constants.
        let ret = unsafe {
            libc::mknod(
                path.as_ptr(),
                libc::S_IFCHR | 0o666,
                libc::makedev(*major, *minor),
            )
        };
        super::sys::cvt(ret, || format!("cannot make /dev/{name}"))?;
        // SAFETY: a valid path.
        unsafe { libc::chmod(path.as_ptr(), 0o666) };
    }
    mkdir_all(&format!("{dev}/pts"))?;
    mount(
        "devpts",
        &format!("{dev}/pts"),
        "devpts",
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )?;
    for (link, to) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, format!("{dev}/{link}"))
            .map_err(super::sys::io_err(format!("cannot link /dev/{link}")))?;
    }
    Ok(())
}

/// Covers `target` with an empty read-only node of its kind.
fn hide(target: &str) -> Result<()> {
    let Ok(meta) = std::fs::metadata(target) else {
        return Ok(());
    };
    if meta.is_dir() {
        mount(
            "tmpfs",
            target,
            "tmpfs",
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            Some("size=4k,mode=0555"),
        )
    } else {
        write_file("/identity-empty", b"")?;
        bind("/identity-empty", target, true)
    }
}

fn chown(path: &str, uid: u32, gid: u32) -> Result<()> {
    let p = super::sys::cstr(path)?;
    // SAFETY: a valid path.
    let ret = unsafe { libc::chown(p.as_ptr(), uid, gid) };
    super::sys::cvt(ret, || format!("cannot hand {path} to the box user")).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::{is_under, unescape};

    #[test]
    fn mountinfo_escapes_are_undone_and_prefixes_are_whole_components() {
        assert_eq!(unescape("/newroot/my\\040dir"), "/newroot/my dir");
        assert_eq!(unescape("/a\\134b"), "/a\\b");
        // Not an escape: left as it is.
        assert_eq!(unescape("/a\\9z"), "/a\\9z");
        assert_eq!(unescape("/a\\777"), "/a\\777");
        assert!(is_under("/newroot/w", "/newroot/w"));
        assert!(is_under("/newroot/w/.git", "/newroot/w/"));
        assert!(!is_under("/newroot/wx", "/newroot/w"));
    }
}
