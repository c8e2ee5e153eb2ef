#![allow(clippy::unwrap_used)]
use super::*;
use airlock_policy::{resolve, HostView, PolicyFile, ResolveContext};
use std::collections::BTreeMap;
use std::path::Path;

struct Host;
impl HostView for Host {
    fn canonicalize(&self, p: &Path) -> io::Result<PathBuf> {
        Ok(p.to_path_buf())
    }
    fn is_dir(&self, p: &Path) -> bool {
        !p.to_string_lossy().ends_with(".txt")
    }
}
struct Fs;
impl HostFs for Fs {
    fn node(&self, p: &Path) -> HostNode {
        match p.to_str().unwrap_or_default() {
            "/bin" => HostNode::Symlink("usr/bin".into()),
            "/usr" | "/lib" | "/etc/ssl" | "/w" | "/data" => HostNode::Dir,
            "/etc/ld.so.cache" | "/data/x.txt" => HostNode::File,
            _ => HostNode::Missing,
        }
    }
}

fn plan(f: PolicyFile) -> RootfsPlan {
    let env = BTreeMap::new();
    let p = resolve(
        &f,
        &ResolveContext {
            cwd: "/w".into(),
            env: &env,
            host: &Host,
        },
    )
    .unwrap();
    RootfsPlan::from_policy(&p, &Fs).unwrap()
}

#[test]
fn system_dirs_read_only_and_symlinks_replicated() {
    let p = plan(PolicyFile::default());
    assert!(p.ops.contains(&FsOp::Bind {
        source: "/usr".into(),
        target: "/usr".into(),
        writable: false,
        kind: NodeKind::Dir,
        optional: false
    }));
    assert!(p.ops.contains(&FsOp::Symlink {
        link: "/bin".into(),
        target: "usr/bin".into()
    }));
    assert!(p.ops.contains(&FsOp::Bind {
        source: "/etc/ssl".into(),
        target: "/etc/ssl".into(),
        writable: false,
        kind: NodeKind::Dir,
        optional: true
    }));
    // Nothing of the host's /etc besides the list (no passwd, shadow, gitconfig from the host).
    assert!(!p.ops.iter().any(|op| matches!(op, FsOp::Bind { source, .. } if source == Path::new("/etc/passwd") || source == Path::new("/etc/shadow"))));
    assert!(p
        .ops
        .iter()
        .any(|op| matches!(op, FsOp::File { target, .. } if target == Path::new("/etc/passwd"))));
}

#[test]
fn workspace_is_writable_and_protected() {
    let p = plan(PolicyFile::default());
    assert!(p.ops.contains(&FsOp::Bind {
        source: "/w".into(),
        target: "/w".into(),
        writable: true,
        kind: NodeKind::Dir,
        optional: false
    }));
    for rel in [
        ".git/hooks",
        ".git/config",
        ".bashrc",
        ".vscode",
        ".mcp.json",
    ] {
        assert!(
            p.covers.contains(&Cover {
                path: Path::new("/w").join(rel),
                keep_visible: true
            }),
            "{rel}"
        );
    }
}

#[test]
fn grants_nest_after_parents_and_deny_hides() {
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/data/x.txt".into());
    f.filesystem.read.push("/data".into());
    f.filesystem.deny.push("/w/secret".into());
    let p = plan(f);
    let pos = |t: &str| {
        p.ops
            .iter()
            .position(|op| matches!(op, FsOp::Bind { target, .. } if target == Path::new(t)))
            .unwrap()
    };
    assert!(pos("/data") < pos("/data/x.txt"));
    assert!(p.covers.contains(&Cover {
        path: "/w/secret".into(),
        keep_visible: false
    }));
}

#[test]
fn read_only_profile_has_no_protected_covers() {
    let p = plan(PolicyFile {
        profile: Some(airlock_policy::Profile::ReadOnly),
        ..Default::default()
    });
    assert!(p.covers.is_empty());
}

#[test]
fn git_dir_is_pinned_so_it_cannot_be_swapped() {
    let p = plan(PolicyFile::default());
    assert_eq!(p.pins, vec![PathBuf::from("/w/.git")]);
    let ro = plan(PolicyFile {
        profile: Some(airlock_policy::Profile::ReadOnly),
        ..Default::default()
    });
    assert!(ro.pins.is_empty());
}

#[test]
fn small_etc_files_are_copied_and_links_replicated() {
    let p = plan(PolicyFile::default());
    assert!(p.ops.contains(&FsOp::Copy {
        source: "/etc/ld.so.cache".into(),
        target: "/etc/ld.so.cache".into()
    }));
    assert!(!p.ops.iter().any(
        |op| matches!(op, FsOp::Bind { source, .. } if source == Path::new("/etc/ld.so.cache"))
    ));
}
