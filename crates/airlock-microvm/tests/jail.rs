//! QEMU's jail, tested without a guest: a shell started exactly as QEMU is (same user and mount
//! namespaces, same covers) stands for QEMU's 9p server acting for a guest whose kernel the box
//! owns. Whatever that shell cannot do to the host, no guest can make QEMU do.
#![allow(clippy::unwrap_used)]

use airlock_microvm::jail::{CoverKind, HostCover, VmmJail, VMM_UID};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(tag: &str) -> Dir {
    let p = std::env::temp_dir().join(format!("airlock-vmm-jail-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    Dir(p)
}

/// The covers the microVM backend gives a protected writable share at `ws` (the one selection
/// the native box uses too), plus `deny` hidden.
fn covers_of(ws: &Path, deny: &[PathBuf]) -> Vec<HostCover> {
    let (pins, paths) = airlock_jail::rootfs::protected_under(ws);
    let mut covers: Vec<HostCover> = pins
        .into_iter()
        .map(|path| HostCover {
            path,
            kind: CoverKind::Pin,
        })
        .collect();
    covers.extend(paths.into_iter().map(|path| HostCover {
        path,
        kind: CoverKind::ReadOnly,
    }));
    covers.extend(deny.iter().map(|d| HostCover {
        path: d.clone(),
        kind: CoverKind::Hide,
    }));
    covers
}

/// Runs `script` in the jail; (exit code, stdout + stderr).
fn jailed(jail: &VmmJail, cwd: &Path, script: &str) -> (i32, String) {
    let prepared = jail.prepare().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", script]).current_dir(cwd);
    // SAFETY: enter() only makes system calls (no allocation) in the forked child.
    unsafe {
        cmd.pre_exec(move || prepared.enter());
    }
    let out = cmd.output().expect("start the jailed shell");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_vmms_jail_holds_protected_paths_and_gives_no_host_privilege() {
    let d = scratch("protect");
    let ws = d.0.join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join(".envrc"), "safe\n").unwrap();
    std::fs::create_dir_all(ws.join("secret")).unwrap();
    std::fs::write(ws.join("secret/key"), "s3cret\n").unwrap();
    std::fs::write(ws.join("plain"), "a\n").unwrap();
    // A file of another user: the jail holds no capability, so not even a root caller's QEMU
    // may write it (it may write what the caller owns, as the caller could).
    let outside = d.0.join("outside");
    std::fs::write(&outside, "victim\n").unwrap();
    std::os::unix::fs::chown(&outside, Some(65534), Some(65534)).unwrap();
    let empties = airlock_microvm::jail::empties(&d.0.join("cache")).unwrap();
    let jail = VmmJail::for_caller(covers_of(&ws, &[ws.join("secret")]), empties);
    let (code, out) = jailed(
        &jail,
        &ws,
        &format!(
            r#"
            echo "uid=$(id -u)"
            echo evil >> .git/config && echo WROTE-CONFIG
            touch .git/hooks/pre-commit && echo WROTE-HOOK
            echo evil > .envrc && echo WROTE-ENVRC
            mv .git .git-moved && echo MOVED-GIT
            rm -rf .git && echo REMOVED-GIT
            cat secret/key 2>/dev/null && echo READ-SECRET
            echo plain-ok >> plain && echo PLAIN-WRITABLE
            echo evil > {outside} && echo WROTE-OUTSIDE
            mount -t tmpfs x .git 2>/dev/null && echo MOUNTED
            exit 0
            "#,
            outside = outside.display()
        ),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("uid={VMM_UID}")), "{out}");
    for bad in [
        "WROTE-CONFIG",
        "WROTE-HOOK",
        "WROTE-ENVRC",
        "MOVED-GIT",
        "REMOVED-GIT",
        "READ-SECRET",
        "WROTE-OUTSIDE",
        "MOUNTED",
    ] {
        assert!(!out.contains(bad), "the jail let {bad} through: {out}");
    }
    // Ordinary files stay writable: the jail narrows, it does not break the share.
    assert!(out.contains("PLAIN-WRITABLE"), "{out}");
    // And the host is untouched.
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".envrc")).unwrap(),
        "safe\n"
    );
    assert!(ws.join(".git").is_dir() && !ws.join(".git-moved").exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "victim\n");
}

#[test]
fn a_gitdir_file_and_a_symlinked_rc_file_are_held_read_only() {
    let d = scratch("gitdir");
    let ws = d.0.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let real_git = d.0.join("real-git");
    std::fs::create_dir_all(&real_git).unwrap();
    std::fs::write(ws.join(".git"), format!("gitdir: {}\n", real_git.display())).unwrap();
    let rc_target = d.0.join("rc-target");
    std::fs::write(&rc_target, "target\n").unwrap();
    std::os::unix::fs::symlink(&rc_target, ws.join(".bashrc")).unwrap();
    let empties = airlock_microvm::jail::empties(&d.0.join("cache")).unwrap();
    let jail = VmmJail::for_caller(covers_of(&ws, &[]), empties);
    let (code, out) = jailed(
        &jail,
        &ws,
        r#"
        echo "gitdir: /tmp/evil" > .git && echo REWROTE-GITDIR
        mv .git gone && echo MOVED-GITDIR
        echo evil > .bashrc && echo WROTE-THROUGH-LINK
        rm -f .bashrc && echo REMOVED-LINK
        exit 0
        "#,
    );
    assert_eq!(code, 0, "{out}");
    for bad in [
        "REWROTE-GITDIR",
        "MOVED-GITDIR",
        "WROTE-THROUGH-LINK",
        "REMOVED-LINK",
    ] {
        assert!(!out.contains(bad), "the jail let {bad} through: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".git")).unwrap(),
        format!("gitdir: {}\n", real_git.display())
    );
    assert_eq!(std::fs::read_to_string(&rc_target).unwrap(), "target\n");
    assert!(std::fs::symlink_metadata(ws.join(".bashrc"))
        .unwrap()
        .file_type()
        .is_symlink());
}
