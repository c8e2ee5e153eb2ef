//! Images the template tests make themselves: a small root tree holding a few of the host's own
//! programs (and the libraries they load), packed by the system's `tar` into an OCI image
//! layout with JSON written here.
#![allow(dead_code, clippy::unwrap_used)]

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs a test template holds.
pub const PROGRAMS: &[&str] = &[
    "sh", "cat", "ls", "echo", "id", "touch", "mkdir", "rm", "env", "pwd", "sleep", "stat", "head",
    "dd", "readlink", "ln", "mount",
];

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// Where `program` is on the host.
fn which(program: &str) -> PathBuf {
    for dir in ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        let p = Path::new(dir).join(program);
        if p.exists() {
            return p;
        }
    }
    panic!("the host has no {program}: install coreutils/dash (the template tests copy it)");
}

/// A merged-/usr root tree with `programs` and their shared libraries, `etc/motd`, `srv/`.
pub fn make_tree(tree: &Path, programs: &[&str]) {
    for d in ["usr/bin", "usr/lib", "usr/lib64", "etc", "srv"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    for (link, to) in [
        ("bin", "usr/bin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
        ("sbin", "usr/bin"),
    ] {
        std::os::unix::fs::symlink(to, tree.join(link)).unwrap();
    }
    for p in programs {
        let host = which(p);
        std::fs::copy(&host, tree.join("usr/bin").join(p)).unwrap();
        let ldd = Command::new("ldd").arg(&host).output().expect("run ldd");
        for lib in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
            if !lib.starts_with('/') {
                continue;
            }
            let inside = lib
                .strip_prefix("/usr")
                .unwrap_or(lib)
                .trim_start_matches('/');
            let dest = tree.join("usr").join(inside);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            if !dest.exists() {
                std::fs::copy(std::fs::canonicalize(lib).unwrap(), &dest).unwrap();
            }
        }
    }
    std::fs::write(tree.join("etc/motd"), "from the template\n").unwrap();
}

/// Packs `tree` as the one layer of an OCI image layout at `out`, with `env` and `workdir` in
/// its config.
pub fn oci_from_tree(tree: &Path, out: &Path, env: &[&str], workdir: &str) {
    let blobs = out.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let layer = out.join("layer.tar");
    let st = Command::new("tar")
        .arg("-C")
        .arg(tree)
        .arg("-cf")
        .arg(&layer)
        .arg(".")
        .status()
        .expect("run tar");
    assert!(st.success(), "tar failed");
    let bytes = std::fs::read(&layer).unwrap();
    std::fs::remove_file(&layer).unwrap();
    let put = |b: &[u8]| {
        let h = sha(b);
        std::fs::write(blobs.join(&h), b).unwrap();
        format!("sha256:{h}")
    };
    let layer_digest = put(&bytes);
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": env, "WorkingDir": workdir},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    });
    let cb = serde_json::to_vec(&config).unwrap();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(&cb), "size": cb.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": bytes.len()}],
    });
    let mb = serde_json::to_vec(&manifest).unwrap();
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": put(&mb), "size": mb.len()}]});
    std::fs::write(out.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::write(out.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
}

/// Every entry under `root` with its mode and, for files, content digest: to show a tree
/// unchanged.
pub fn listing(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if m.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{rel}/ {:o}", m.mode() & 0o7777));
                walk(root, &p, out);
            } else {
                out.push(format!(
                    "{rel} {:o} {}",
                    m.mode() & 0o7777,
                    sha(&std::fs::read(&p).unwrap())
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}
