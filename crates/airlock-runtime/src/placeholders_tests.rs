use super::*;
use crate::test_dir::TestDir;
use std::os::unix::fs::FileTypeExt;

fn comps(rel: &str) -> Vec<&OsStr> {
    Path::new(rel).iter().collect()
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
        first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap(),
        Some(1)
    );
    assert!(t.path().join(".git").is_dir());
    assert!(!t.path().join(".git/hooks").exists());
    assert_eq!(
        first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap(),
        Some(2)
    );
    assert!(t.path().join(".git/hooks").is_dir());
    assert_eq!(
        first_missing(t.path(), &comps(".git/config"), ProtectedKind::File).unwrap(),
        Some(2)
    );
    let meta = std::fs::symlink_metadata(t.path().join(".git/config")).unwrap();
    assert!(meta.is_file() && meta.len() == 0);
    // Everything there now: nothing more to make.
    assert_eq!(
        first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap(),
        None
    );
    assert_eq!(
        first_missing(t.path(), &comps(".git/config"), ProtectedKind::File).unwrap(),
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
        first_missing(&ws, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(),
        None
    );
    assert_eq!(
        first_missing(&ws, &comps(".git/config"), ProtectedKind::File).unwrap(),
        None
    );
    assert_eq!(
        first_missing(&ws, &comps(".envrc"), ProtectedKind::File).unwrap(),
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
        first_missing(t.path(), &comps(".git/hooks"), ProtectedKind::Dir).unwrap(),
        None
    );
    let fifo = CString::new(t.path().join(".envrc").as_os_str().as_bytes()).unwrap();
    // SAFETY: fifo is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Returns at once (nothing opens the FIFO) and leaves it a FIFO.
    assert_eq!(
        first_missing(t.path(), &comps(".envrc"), ProtectedKind::File).unwrap(),
        None
    );
    assert!(std::fs::symlink_metadata(t.path().join(".envrc"))
        .unwrap()
        .file_type()
        .is_fifo());
    // A writable grant of a single file has nothing under it.
    assert_eq!(
        first_missing(
            &t.path().join(".git"),
            &comps(".envrc"),
            ProtectedKind::File
        )
        .unwrap(),
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
