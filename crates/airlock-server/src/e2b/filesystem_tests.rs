#![allow(clippy::unwrap_used)]

use super::*;

fn entry(kind: EntryKind, mode: u32, size: u64) -> Entry {
    Entry {
        path: "/home/user/x".into(),
        name: "x".into(),
        kind,
        size,
        mode,
        mtime: 0,
        uid: 1000,
        gid: 1000,
        target: None,
        xattrs: BTreeMap::new(),
    }
}

#[test]
fn entries_are_proto3_json() {
    let f = entry_info(&entry(EntryKind::File, 0o644, 12));
    assert_eq!(f["type"], "FILE_TYPE_FILE");
    assert_eq!(f["size"], "12");
    assert_eq!(f["mode"], 0o644);
    assert_eq!(f["permissions"], "-rw-r--r--");
    assert_eq!(f["modifiedTime"], "1970-01-01T00:00:00Z");
    let d = entry_info(&entry(EntryKind::Dir, 0o755, 0));
    assert_eq!(d["type"], "FILE_TYPE_DIRECTORY");
    assert!(d.get("size").is_none(), "defaults are omitted");
    assert_eq!(
        d["mode"], 493,
        "a directory's mode is its permission bits, as envd's"
    );
    assert_eq!(d["permissions"], "drwxr-xr-x");
    let l = entry_info(&entry(EntryKind::Symlink, 0o777, 5));
    assert_eq!(l["type"], "FILE_TYPE_SYMLINK");
    assert_eq!(l["permissions"], "Lrwxrwxrwx");
    assert!(entry_info(&entry(EntryKind::Other, 0, 0))
        .get("type")
        .is_none());
    assert_eq!(
        (f["owner"].as_str(), f["group"].as_str()),
        (Some("user"), Some("user"))
    );
    assert!(f.get("symlinkTarget").is_none());
    let mut other = entry(EntryKind::Symlink, 0o777, 1);
    (other.uid, other.gid, other.target) = (0, 4242, Some("../t".into()));
    let o = entry_info(&other);
    assert_eq!(
        (
            o["owner"].as_str(),
            o["group"].as_str(),
            o["symlinkTarget"].as_str()
        ),
        (Some("root"), Some("4242"), Some("../t"))
    );
}

#[test]
fn metadata_is_the_e2b_xattrs_without_their_prefix() {
    let mut f = entry(EntryKind::File, 0o644, 1);
    f.xattrs = BTreeMap::from([
        ("user.e2b.owner".to_string(), "alice".to_string()),
        ("user.other".to_string(), "not e2b's".to_string()),
        ("user.e2b.".to_string(), "no key".to_string()),
    ]);
    assert_eq!(entry_info(&f)["metadata"], json!({"owner": "alice"}));
    assert!(
        entry_info(&entry(EntryKind::File, 0o644, 1))
            .get("metadata")
            .is_none(),
        "no metadata: the field is omitted"
    );
}

#[test]
fn symlink_targets_resolve_against_the_link_directory() {
    assert_eq!(joined("/home/user/ln", "t.txt"), "/home/user/t.txt");
    assert_eq!(joined("/home/user/a/ln", "../b/./c"), "/home/user/b/c");
    assert_eq!(joined("/home/user/ln", "/etc/hosts"), "/etc/hosts");
    assert_eq!(joined("/ln", "../../x"), "/x", "`..` stops at the root");
}
