use super::made::Removal;
use super::*;
use crate::test_dir::TestDir;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

fn comps(rel: &str) -> Vec<&OsStr> {
    Path::new(rel).iter().collect()
}

/// How many components `first_missing` made, dropping the entry.
fn depth(made: Option<(usize, MadeEntry)>) -> Option<usize> {
    made.map(|(d, _)| d)
}

fn made(root: &Path, rel: &str, kind: ProtectedKind) -> MadeEntry {
    first_missing(root, &comps(rel), kind)
        .unwrap()
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("{rel} was not made"))
}

/// (inode, content) of a file, or (inode, sorted entries) of a directory, for "untouched" checks.
fn state(p: &Path) -> (u64, Vec<String>) {
    let meta = std::fs::symlink_metadata(p).unwrap();
    if meta.is_dir() {
        (meta.ino(), entries(p))
    } else {
        (
            meta.ino(),
            vec![String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned()],
        )
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn makes_the_first_missing_component_only() {
    let t = TestDir::new("placeholders-first");
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap()),
        Some(1)
    );
    assert!(t.path().join(".git").is_dir());
    assert!(!t.path().join(".git/hooks").exists());
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap()),
        Some(2)
    );
    assert!(t.path().join(".git/hooks").is_dir());
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/config"), ProtectedKind::File).unwrap()),
        Some(2)
    );
    let meta = std::fs::symlink_metadata(t.path().join(".git/config")).unwrap();
    assert!(meta.is_file() && meta.len() == 0);
    // Everything there now: nothing more to make.
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap()),
        None
    );
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/config"), ProtectedKind::File).unwrap()),
        None
    );
}

#[test]
fn never_makes_anything_through_a_symlink() {
    let t = TestDir::new("placeholders-symlink");
    let ws = t.path().join("ws");
    let outside = t.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".git")).unwrap();
    std::os::unix::fs::symlink(outside.join("rc"), ws.join(".envrc")).unwrap();
    assert_eq!(
        depth(first_missing(&ws, &comps(".git/hooks"), ProtectedKind::Dir).unwrap()),
        None
    );
    assert_eq!(
        depth(first_missing(&ws, &comps(".git/config"), ProtectedKind::File).unwrap()),
        None
    );
    assert_eq!(
        depth(first_missing(&ws, &comps(".envrc"), ProtectedKind::File).unwrap()),
        None
    );
    assert!(
        entries(&outside).is_empty(),
        "made outside the workspace: {:?}",
        entries(&outside)
    );
}

#[test]
fn leaves_files_fifos_and_file_roots_alone() {
    let t = TestDir::new("placeholders-other");
    std::fs::write(t.path().join(".git"), "gitdir: elsewhere\n").unwrap();
    assert_eq!(
        depth(first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap()),
        None
    );
    let fifo = CString::new(t.path().join(".envrc").as_os_str().as_bytes()).unwrap();
    // SAFETY: fifo is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Returns at once (nothing opens the FIFO) and leaves it a FIFO.
    assert_eq!(
        depth(first_missing(t.path(), &comps(".envrc"), ProtectedKind::File).unwrap()),
        None
    );
    assert!(std::fs::symlink_metadata(t.path().join(".envrc"))
        .unwrap()
        .file_type()
        .is_fifo());
    // A writable grant of a single file has nothing under it.
    assert_eq!(
        depth(
            first_missing(
                &t.path().join(".git"),
                &comps(".envrc"),
                ProtectedKind::File
            )
            .unwrap()
        ),
        None
    );
    assert_eq!(
        entries(t.path()),
        vec![".envrc".to_string(), ".git".to_string()]
    );
}

#[test]
fn a_missing_root_is_an_error() {
    let t = TestDir::new("placeholders-missing");
    assert!(first_missing(
        &t.path().join("nope"),
        &comps(".envrc"),
        ProtectedKind::File
    )
    .is_err());
}

#[test]
fn removal_never_follows_a_parent_swapped_for_a_symlink() {
    // The race of a second box whose grant holds this workspace: it replaces `.git` (holding the
    // placeholders) with a symlink to a directory outside, whose `config` is empty and whose
    // `hooks` is empty, exactly what removal by path would delete.
    let t = TestDir::new("placeholders-swap");
    let ws = t.path().join("ws");
    let outside = t.path().join("outside");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(outside.join("hooks")).unwrap();
    std::fs::write(outside.join("config"), "").unwrap();
    let before = (
        state(&outside.join("config")),
        state(&outside.join("hooks")),
    );
    let hooks = made(&ws, ".git/hooks", ProtectedKind::Dir);
    let config = made(&ws, ".git/config", ProtectedKind::File);
    std::fs::rename(ws.join(".git"), ws.join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".git")).unwrap();

    // Removed where they really are (the moved directory, inside the grant), nothing outside.
    assert_eq!(config.remove(), Removal::Removed);
    assert_eq!(hooks.remove(), Removal::Removed);
    assert_eq!(
        (
            state(&outside.join("config")),
            state(&outside.join("hooks"))
        ),
        before,
        "removal went through the symlink"
    );
    assert_eq!(entries(&outside), vec!["config", "hooks"]);
    assert!(entries(&ws.join("moved")).is_empty());

    // The same when the directory holding them is deleted instead of moved.
    let t = TestDir::new("placeholders-swap-rm");
    let ws = t.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let config = made(&ws, ".git/config", ProtectedKind::File);
    std::fs::remove_dir_all(ws.join(".git")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".git")).unwrap();
    assert_eq!(config.remove(), Removal::Gone);
    assert_eq!(state(&outside.join("config")), before.0);
}

#[test]
fn removal_leaves_a_replaced_or_filled_entry_alone() {
    let t = TestDir::new("placeholders-replaced");
    let ws = t.path().join("ws");
    let outside = t.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();

    // A file placeholder swapped for another empty file, and a directory placeholder swapped for
    // a symlink to an empty directory outside: neither is what airlock made.
    let envrc = made(&ws, ".envrc", ProtectedKind::File);
    std::fs::remove_file(ws.join(".envrc")).unwrap();
    std::fs::write(ws.join(".envrc"), "").unwrap();
    assert_eq!(envrc.remove(), Removal::Replaced);
    assert!(ws.join(".envrc").is_file());
    let vscode = made(&ws, ".vscode", ProtectedKind::Dir);
    std::fs::remove_dir(ws.join(".vscode")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".vscode")).unwrap();
    assert_eq!(vscode.remove(), Removal::Replaced);
    assert!(outside.is_dir());
    assert!(std::fs::symlink_metadata(ws.join(".vscode"))
        .unwrap()
        .file_type()
        .is_symlink());

    // Still the placeholders, but no longer empty: kept.
    let bashrc = made(&ws, ".bashrc", ProtectedKind::File);
    std::fs::write(ws.join(".bashrc"), "kept\n").unwrap();
    assert_eq!(bashrc.remove(), Removal::NotEmpty);
    let idea = made(&ws, ".idea", ProtectedKind::Dir);
    std::fs::write(ws.join(".idea/kept"), "").unwrap();
    assert_eq!(idea.remove(), Removal::NotEmpty);
    assert_eq!(
        std::fs::read_to_string(ws.join(".bashrc")).unwrap(),
        "kept\n"
    );
    assert!(ws.join(".idea/kept").is_file());

    // Untouched placeholders go.
    let profile = made(&ws, ".profile", ProtectedKind::File);
    let claude = made(&ws, ".claude", ProtectedKind::Dir);
    assert_eq!(profile.remove(), Removal::Removed);
    assert_eq!(claude.remove(), Removal::Removed);
    assert_eq!(profile.remove(), Removal::Gone);
    assert_eq!(entries(&ws), vec![".bashrc", ".envrc", ".idea", ".vscode"]);
}

#[test]
fn a_record_and_its_directory_remove_the_same_entry() {
    // What the sentinel gets: the record line and a copy of the directory descriptor.
    let t = TestDir::new("placeholders-record");
    let entry = made(t.path(), ".mcp.json", ProtectedKind::File);
    let [parent, pin] = entry.fds().map(dup);
    let again = MadeEntry::from_record(&entry.record(), parent, pin).unwrap();
    assert_eq!(again.record(), entry.record());
    drop(entry);
    assert_eq!(again.remove(), Removal::Removed);
    assert!(entries(t.path()).is_empty());

    let dir = || {
        std::fs::File::open(t.path())
            .map(std::os::fd::OwnedFd::from)
            .unwrap()
    };
    for bad in ["", "file", "file ", "fifo x", "dir a/b", "dir .."] {
        assert!(
            MadeEntry::from_record(bad, dir(), dir()).is_none(),
            "accepted {bad:?}"
        );
    }
}

fn dup(fd: libc::c_int) -> std::os::fd::OwnedFd {
    // SAFETY: fd is open for the duration of the call; dup's result is checked.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    assert!(new >= 0, "dup: {}", std::io::Error::last_os_error());
    // SAFETY: new is a fresh descriptor owned by nobody else.
    unsafe { std::os::fd::FromRawFd::from_raw_fd(new) }
}
