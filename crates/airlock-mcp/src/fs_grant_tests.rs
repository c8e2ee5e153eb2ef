use super::*;
use airlock_policy::{add_grant, FilesystemPolicy, PolicyFile};

/// A directory of this test's own, removed at the end.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("airlock-fsgrant-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("file.txt"), "x").unwrap();
    Dir(std::fs::canonicalize(&d).unwrap())
}

fn policy(ws: &Path, profile: Option<Profile>) -> ResolvedPolicy {
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        ..Default::default()
    };
    file.profile = profile;
    let env = BTreeMap::new();
    airlock_policy::resolve(
        &file,
        &ResolveContext {
            cwd: ws.to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap()
}

fn ask(path: &str, access: &str) -> JsonObject {
    serde_json::json!({"path": path, "access": access, "reason": "read the\u{1b}[2J data"})
        .as_object()
        .unwrap()
        .clone()
}

#[test]
fn a_request_becomes_the_mount_a_flag_would_make() {
    let ws = dir("ws");
    let data = dir("data");
    let p = policy(&ws.0, None);
    let a = FsGrantAsk::parse(&ask(&data.0.to_string_lossy(), "read"), &p, &[]).unwrap();
    assert_eq!(a.mount.host, data.0);
    assert_eq!(a.mount.inside, data.0);
    assert_eq!(a.mount.access, Access::ReadOnly);
    assert_eq!(
        a.reason, "read the [2J data",
        "control characters are blanked"
    );
    assert_eq!(a.grant(), format!("read:{}", data.0.display()));
    assert!(a
        .remedy()
        .starts_with(&format!("--read {}", data.0.display())));
    assert!(a.remedy().contains("[filesystem] read = ["));
    assert!(a.question().contains(&format!("read {}", data.0.display())));
    assert!(a.question().contains("restarts"));
    let w = FsGrantAsk::parse(&ask(&data.0.to_string_lossy(), "write"), &p, &[]).unwrap();
    assert_eq!(w.mount.access, Access::ReadWrite);
    assert!(
        w.mount.protect,
        "a writable directory keeps its protected paths"
    );
    assert!(w.question().contains("change or delete"));
}

#[test]
fn bad_and_dangerous_requests_are_refused_before_anyone_is_asked() {
    let ws = dir("ws-bad");
    let data = dir("data-bad");
    let p = policy(&ws.0, None);
    let refused = |path: &str, access: &str, off: &[PathBuf]| {
        FsGrantAsk::parse(&ask(path, access), &p, off).unwrap_err()
    };
    assert!(refused("relative/dir", "read", &[]).contains("not absolute"));
    assert!(refused("/", "read", &[]).contains("whole host"));
    assert!(refused("/proc/1", "read", &[]).contains("/proc"));
    assert!(refused("/etc", "read", &[]).contains("under /etc"));
    assert!(refused("/usr/bin", "read", &[]).contains("under /usr"));
    assert!(refused("/run", "write", &[]).contains("under /run"));
    assert!(refused("/tmp", "write", &[]).contains("/tmp as a whole"));
    assert!(refused("/home", "read", &[]).contains("/home as a whole"));
    assert!(refused("/nonexistent-airlock-path", "read", &[]).contains("cannot be granted"));
    let d = data.0.to_string_lossy().into_owned();
    assert!(refused(&d, "delete", &[]).contains("access"));
    let log = data.0.join("sub").join("audit.jsonl");
    assert!(refused(&d, "write", std::slice::from_ref(&log)).contains("must never change"));
    // Reading the directory that holds it changes nothing.
    assert!(FsGrantAsk::parse(&ask(&d, "read"), &p, &[log]).is_ok());
    let ro = policy(&ws.0, Some(Profile::ReadOnly));
    assert!(FsGrantAsk::parse(&ask(&d, "write"), &ro, &[])
        .unwrap_err()
        .contains("read-only"));
    let mut vm = p.clone();
    vm.backend = BackendKind::Microvm;
    let file = data.0.join("file.txt").to_string_lossy().into_owned();
    assert!(FsGrantAsk::parse(&ask(&file, "read"), &vm, &[])
        .unwrap_err()
        .contains("not a directory"));
}

#[test]
fn a_grant_is_added_once_and_write_upgrades_read() {
    let ws = dir("ws-add");
    let data = dir("data-add");
    let mut p = policy(&ws.0, None);
    let d = data.0.to_string_lossy().into_owned();
    let read = FsGrantAsk::parse(&ask(&d, "read"), &p, &[]).unwrap();
    assert_eq!(add_grant(&mut p, read.mount.clone()), Ok(true));
    assert_eq!(add_grant(&mut p, read.mount), Ok(false));
    let write = FsGrantAsk::parse(&ask(&d, "write"), &p, &[]).unwrap();
    assert_eq!(add_grant(&mut p, write.mount), Ok(true));
    let FilesystemPolicy::Isolated { grants, .. } = &p.filesystem else {
        panic!("isolated")
    };
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].access, Access::ReadWrite);
    // The workspace itself is already there.
    let again = FsGrantAsk::parse(&ask(&ws.0.to_string_lossy(), "write"), &p, &[]).unwrap();
    assert_eq!(add_grant(&mut p, again.mount), Ok(false));
}
