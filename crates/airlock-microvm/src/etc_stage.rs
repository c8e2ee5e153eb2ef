//! The `/etc` a host-template box sees: the selected host entries (what loaders, TLS, locales
//! and interpreters need; no credentials) copied into a cached directory with the box's
//! synthesized identity files, shared read-only. The host's own `/etc` is never exported to
//! the guest, so not even a compromised guest kernel can read `shadow` through QEMU.

use crate::MicrovmError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Host `/etc` entries shown in a host-template box: the native box's own list, so both
/// backends show the same files and a change to the list reaches both.
pub use airlock_jail::rootfs::ETC_ENTRIES;

/// How many staged `/etc` trees the cache keeps.
const KEEP: usize = 4;

/// What one staged tree holds, as (path under /etc, what it is).
enum Node {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
}

/// The staged `/etc` for a box user `user` (`uid`, `gid`, `home`), made if missing.
pub fn staged(
    cache: &Path,
    user: &str,
    uid: u32,
    gid: u32,
    home: &str,
) -> Result<PathBuf, MicrovmError> {
    let mut nodes: Vec<(PathBuf, Node)> = Vec::new();
    for entry in ETC_ENTRIES {
        collect(&Path::new("/etc").join(entry), Path::new(entry), &mut nodes);
    }
    let mut passwd = format!("{user}:x:{uid}:{gid}:{user}:{home}:/bin/bash\n");
    if uid != 0 {
        passwd.push_str("root:x:0:0:root:/root:/usr/sbin/nologin\n");
    }
    passwd.push_str("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    let mut group = format!("{user}:x:{gid}:\n");
    if gid != 0 {
        group.push_str("root:x:0:\n");
    }
    group.push_str("nogroup:x:65534:\n");
    let hosts = "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n";
    for (name, data) in [
        ("passwd", passwd.into_bytes()),
        ("group", group.into_bytes()),
        ("hosts", hosts.as_bytes().to_vec()),
        ("hostname", b"airlock\n".to_vec()),
    ] {
        nodes.push((PathBuf::from(name), Node::File(data)));
    }
    let mut hash = Sha256::new();
    for (path, node) in &nodes {
        hash.update(path.as_os_str().as_encoded_bytes());
        match node {
            Node::Dir => hash.update(b"\0d"),
            Node::File(data) => {
                hash.update(b"\0f");
                hash.update((data.len() as u64).to_le_bytes());
                hash.update(data);
            }
            Node::Link(to) => {
                hash.update(b"\0l");
                hash.update(to.as_os_str().as_encoded_bytes());
            }
        }
    }
    let dir = cache
        .join("etc")
        .join(crate::initramfs::hex(&hash.finalize()[..12]));
    if dir.is_dir() {
        crate::cache::touch(&dir);
        return Ok(dir);
    }
    let tmp = crate::cache::temp_beside(&dir)?;
    let made = write_tree(&tmp, &nodes);
    if let Err(e) = made.and_then(|()| {
        std::fs::rename(&tmp, &dir).or_else(|e| if dir.is_dir() { Ok(()) } else { Err(e) })
    }) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(MicrovmError::io(
            format!("cannot stage the box's /etc at {}", dir.display()),
            e,
        ));
    }
    prune_dirs(&cache.join("etc"), KEEP);
    Ok(dir)
}

/// Adds `host` (a path under /etc) and what is under it; unreadable entries are left out.
fn collect(host: &Path, rel: &Path, out: &mut Vec<(PathBuf, Node)>) {
    let Ok(meta) = std::fs::symlink_metadata(host) else {
        return;
    };
    if meta.file_type().is_symlink() {
        if let Ok(to) = std::fs::read_link(host) {
            out.push((rel.to_path_buf(), Node::Link(to)));
        }
    } else if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(host) else {
            return;
        };
        out.push((rel.to_path_buf(), Node::Dir));
        let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            collect(&host.join(&name), &rel.join(&name), out);
        }
    } else if meta.is_file() {
        if let Ok(data) = std::fs::read(host) {
            out.push((rel.to_path_buf(), Node::File(data)));
        }
    }
}

fn write_tree(root: &Path, nodes: &[(PathBuf, Node)]) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    for (rel, node) in nodes {
        let path = root.join(rel);
        match node {
            Node::Dir => std::fs::create_dir_all(&path)?,
            Node::File(data) => std::fs::write(&path, data)?,
            Node::Link(to) => std::os::unix::fs::symlink(to, &path)?,
        }
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755))
}

fn prune_dirs(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in found.into_iter().skip(keep) {
        let _ = std::fs::remove_dir_all(path);
    }
}
