//! `--changes apply` (airlock run's default): the box writes its workspace into a change layer
//! that airlock applies to the host when the box ends. These runs check that what the box did
//! is what the host gets (creations, edits, deletions, renames, symlinks, a file replaced by a
//! directory and back, modes), that applying follows no symlink planted on the host side and
//! writes nothing outside the workspace, and that protected paths stay untouched, as root and
//! as an unprivileged user.

#![allow(clippy::unwrap_used)]

mod common;

use common::{
    airlock_bin, binary_for_test_user, ensure_test_user, is_root, Run, TempDir, TEST_USER,
};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

/// The workspace before the run, the script the box runs, and what the host must hold after.
fn prepare(ws: &Path, victim_dir: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("edit.txt", "old\n");
    w("gone.txt", "delete me\n");
    w("old-name.txt", "renamed\n");
    w("dir/a.txt", "a\n");
    w("dir/sub/b.txt", "b\n");
    w("became-dir", "a file\n");
    w("became-file/inner.txt", "inner\n");
    w("chmod.sh", "#!/bin/sh\n");
    w("unchanged.txt", "same\n");
    std::fs::create_dir_all(victim_dir).unwrap();
    std::fs::write(victim_dir.join("victim.txt"), "victim\n").unwrap();
    // Planted on the host side (e.g. by an earlier box): applying must not write through them.
    std::os::unix::fs::symlink(victim_dir, ws.join("planted-dir")).unwrap();
    std::os::unix::fs::symlink(victim_dir.join("victim.txt"), ws.join("planted-file")).unwrap();
}

const SCRIPT: &str = "set -e
echo new > edit.txt
rm gone.txt
mv old-name.txt new-name.txt
echo created > created.txt
mkdir -p fresh/deeper && echo deep > fresh/deeper/f.txt
rm -r dir/sub
rm became-dir && mkdir became-dir && echo now a dir > became-dir/x
rm -r became-file && echo now a file > became-file
ln -s edit.txt link-to-edit
ln -s /etc/passwd link-out
chmod 0755 chmod.sh
echo private > private.txt && chmod 0600 private.txt
mkfifo pipe
rm planted-dir && mkdir planted-dir && echo pwned > planted-dir/victim.txt
rm planted-file && echo pwned > planted-file
echo hook > .git/hooks/pre-commit 2>/dev/null || echo hook-refused
echo done";

fn check(ws: &Path, victim_dir: &Path, owner: u32) {
    let read =
        |rel: &str| std::fs::read_to_string(ws.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(read("edit.txt"), "new\n");
    assert!(!ws.join("gone.txt").exists());
    assert!(!ws.join("old-name.txt").exists());
    assert_eq!(read("new-name.txt"), "renamed\n");
    assert_eq!(read("created.txt"), "created\n");
    assert_eq!(read("fresh/deeper/f.txt"), "deep\n");
    assert_eq!(read("dir/a.txt"), "a\n");
    assert!(!ws.join("dir/sub").exists());
    assert!(ws.join("became-dir").is_dir());
    assert_eq!(read("became-dir/x"), "now a dir\n");
    assert!(std::fs::symlink_metadata(ws.join("became-file"))
        .unwrap()
        .is_file());
    assert_eq!(read("became-file"), "now a file\n");
    assert_eq!(
        std::fs::read_link(ws.join("link-to-edit")).unwrap(),
        Path::new("edit.txt")
    );
    assert_eq!(
        std::fs::read_link(ws.join("link-out")).unwrap(),
        Path::new("/etc/passwd")
    );
    let mode = |rel: &str| {
        std::fs::symlink_metadata(ws.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("chmod.sh"), 0o755);
    assert_eq!(mode("private.txt"), 0o600);
    assert_eq!(read("unchanged.txt"), "same\n");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(ws.join("pipe"))
        .unwrap()
        .file_type()
        .is_fifo());
    // The planted symlinks were replaced, not followed: the victim outside is untouched.
    assert_eq!(
        std::fs::read_to_string(victim_dir.join("victim.txt")).unwrap(),
        "victim\n"
    );
    assert_eq!(std::fs::read_dir(victim_dir).unwrap().count(), 1);
    assert!(std::fs::symlink_metadata(ws.join("planted-dir"))
        .unwrap()
        .is_dir());
    assert_eq!(read("planted-dir/victim.txt"), "pwned\n");
    assert!(std::fs::symlink_metadata(ws.join("planted-file"))
        .unwrap()
        .is_file());
    // Protected paths: nothing of the box's.
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    // Ownership as in direct mode: the caller's.
    for rel in [
        "created.txt",
        "fresh/deeper/f.txt",
        "became-dir",
        "link-out",
        "edit.txt",
    ] {
        let m = std::fs::symlink_metadata(ws.join(rel)).unwrap();
        assert_eq!(m.uid(), owner, "{rel} is owned by {}", m.uid());
        assert_eq!(m.mode() & 0o6000, 0, "{rel} has a set-ID bit");
    }
    // No temporary file of the apply is left.
    let left: Vec<_> = std::fs::read_dir(ws)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".airlock-apply")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn run_in(bin: &Path, ws: &Path, result: &Path, as_user: bool) -> (Run, serde_json::Value) {
    let mut cmd = if as_user {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            TEST_USER,
            "--regid",
            TEST_USER,
            "--init-groups",
            "--",
        ])
        .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let out = cmd
        .args(["run", "--result"])
        .arg(result)
        .args(["--", "sh", "-c", SCRIPT])
        .current_dir(ws)
        .stdin(Stdio::null())
        .output()
        .expect("run airlock");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let text = std::fs::read_to_string(result)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", run.stderr));
    (run, serde_json::from_str(&text).expect("result is JSON"))
}

fn assert_applied(run: &Run, doc: &serde_json::Value) {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("hook-refused"), "{}", run.stdout);
    assert!(run.stdout.contains("done"), "{}", run.stdout);
    let changes = &doc["changes"];
    assert!(
        changes["failed"].as_array().unwrap().is_empty(),
        "{changes}"
    );
    assert!(changes["written"].as_u64().unwrap() >= 10, "{changes}");
    assert!(changes["deleted"].as_u64().unwrap() >= 3, "{changes}");
}

#[test]
fn apply_replays_the_boxs_changes_without_following_host_symlinks() {
    let t = TempDir::new("changes-root");
    let ws = t.join("ws");
    let victim = t.join("victim");
    prepare(&ws, &victim);
    let (run, doc) = run_in(&airlock_bin(), &ws, &t.join("result.json"), false);
    assert_applied(&run, &doc);
    // SAFETY: geteuid cannot fail.
    check(&ws, &victim, unsafe { libc::geteuid() });
}

#[test]
fn apply_as_an_unprivileged_user() {
    assert!(
        is_root(),
        "this test runs airlock as {TEST_USER} and must start as root"
    );
    let (uid, gid, _home) = ensure_test_user();
    let (_bin_dir, bin) = binary_for_test_user("changes-unpriv-bin");
    let t = TempDir::new("changes-unpriv");
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = t.join("ws");
    let victim = t.join("victim");
    prepare(&ws, &victim);
    let out = t.join("out");
    std::fs::create_dir_all(&out).unwrap();
    for dir in [&ws, &out, &victim] {
        Command::new("chown")
            .args(["-hR", &format!("{uid}:{gid}")])
            .arg(dir)
            .status()
            .expect("chown");
    }
    let (run, doc) = run_in(&bin, &ws, &out.join("result.json"), true);
    assert_applied(&run, &doc);
    check(&ws, &victim, uid);
}
