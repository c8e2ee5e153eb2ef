use super::*;
use std::os::unix::fs::FileTypeExt;

struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let p = std::env::temp_dir().join(format!("airlock-placeholders-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn comps(rel: &str) -> Vec<&OsStr> {
    Path::new(rel).iter().collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn makes_the_first_missing_component_only() {
    let t = Scratch::new("first");
    assert_eq!(first_missing(&t.0, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(), Some(1));
    assert!(t.0.join(".git").is_dir());
    assert!(!t.0.join(".git/hooks").exists());
    assert_eq!(first_missing(&t.0, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(), Some(2));
    assert!(t.0.join(".git/hooks").is_dir());
    assert_eq!(first_missing(&t.0, &comps(".git/config"), ProtectedKind::File).unwrap(), Some(2));
    let meta = std::fs::symlink_metadata(t.0.join(".git/config")).unwrap();
    assert!(meta.is_file() && meta.len() == 0);
    // Everything there now: nothing more to make.
    assert_eq!(first_missing(&t.0, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(), None);
    assert_eq!(first_missing(&t.0, &comps(".git/config"), ProtectedKind::File).unwrap(), None);
}

#[test]
fn never_makes_anything_through_a_symlink() {
    let t = Scratch::new("symlink");
    let ws = t.0.join("ws");
    let outside = t.0.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".git")).unwrap();
    std::os::unix::fs::symlink(outside.join("rc"), ws.join(".envrc")).unwrap();
    assert_eq!(first_missing(&ws, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(), None);
    assert_eq!(first_missing(&ws, &comps(".git/config"), ProtectedKind::File).unwrap(), None);
    assert_eq!(first_missing(&ws, &comps(".envrc"), ProtectedKind::File).unwrap(), None);
    assert!(entries(&outside).is_empty(), "made outside the workspace: {:?}", entries(&outside));
}

#[test]
fn leaves_files_fifos_and_file_roots_alone() {
    let t = Scratch::new("other");
    std::fs::write(t.0.join(".git"), "gitdir: elsewhere\n").unwrap();
    assert_eq!(first_missing(&t.0, &comps(".git/hooks"), ProtectedKind::Dir).unwrap(), None);
    let fifo = CString::new(t.0.join(".envrc").as_os_str().as_bytes()).unwrap();
    // SAFETY: fifo is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Returns at once (nothing opens the FIFO) and leaves it a FIFO.
    assert_eq!(first_missing(&t.0, &comps(".envrc"), ProtectedKind::File).unwrap(), None);
    assert!(std::fs::symlink_metadata(t.0.join(".envrc")).unwrap().file_type().is_fifo());
    // A writable grant of a single file has nothing under it.
    assert_eq!(first_missing(&t.0.join(".git"), &comps(".envrc"), ProtectedKind::File).unwrap(), None);
    assert_eq!(entries(&t.0), vec![".envrc".to_string(), ".git".to_string()]);
}

#[test]
fn a_missing_root_is_an_error() {
    let t = Scratch::new("missing");
    assert!(first_missing(&t.0.join("nope"), &comps(".envrc"), ProtectedKind::File).is_err());
}
