use super::*;

fn fresh(tag: &str) -> (PathBuf, TemplateStore) {
    let base = std::env::temp_dir().join(format!("airlock-store-{tag}-{}", std::process::id()));
    let _ = remove_tree(&base);
    let store = TemplateStore::open(&base).unwrap();
    (base, store)
}

fn stage_with(store: &TemplateStore, files: &[(&str, &str)]) -> Staged {
    let s = store.stage().unwrap();
    for (p, c) in files {
        let path = s.rootfs().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    }
    s
}

fn tree_source() -> TemplateSource {
    TemplateSource::Tree {
        path: "test".into(),
    }
}

#[test]
fn a_stored_template_is_found_by_name_and_its_digest_is_its_content() {
    let (base, store) = fresh("get");
    let a = store
        .commit(
            stage_with(&store, &[("bin/x", "1")]),
            "a",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    let b = store
        .commit(
            stage_with(&store, &[("bin/x", "2")]),
            "b",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    assert_ne!(a.meta.digest, b.meta.digest);
    let Template::Image(t) = store.get("a").unwrap() else {
        panic!("not an image")
    };
    assert_eq!(t.digest, a.meta.digest);
    assert_eq!(
        std::fs::read_to_string(t.rootfs.join("bin/x")).unwrap(),
        "1"
    );
    assert_eq!(store.get("host").unwrap(), Template::Host);
    assert_eq!(store.names().unwrap(), vec!["a", "b"]);
    // The same content under a new name is the same tree.
    let c = store
        .commit(
            stage_with(&store, &[("bin/x", "1")]),
            "c",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    assert_eq!(c.rootfs, a.rootfs);
    // Nothing staged is left.
    assert!(base
        .join("templates/staging")
        .read_dir()
        .unwrap()
        .next()
        .is_none());
    let err = store.get("nope").unwrap_err().to_string();
    assert!(err.contains("\"nope\"") && err.contains("a, b, c"), "{err}");
    let _ = remove_tree(&base);
}

#[test]
fn a_template_held_by_a_box_cannot_be_removed_and_goes_once_released() {
    let (base, store) = fresh("rm");
    let t = store
        .commit(
            stage_with(&store, &[("f", "1")]),
            "t",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    let lease = crate::hold(&t.rootfs).unwrap();
    let err = store.remove("t").unwrap_err();
    assert!(matches!(err, TemplateError::InUse { .. }), "{err}");
    assert!(t.rootfs.join("f").exists());
    drop(lease);
    store.remove("t").unwrap();
    assert!(!t.rootfs.exists());
    assert!(store.names().unwrap().is_empty());
    assert!(base
        .join("templates/images")
        .read_dir()
        .unwrap()
        .next()
        .is_none());
    let _ = remove_tree(&base);
}

#[test]
fn renaming_a_name_to_new_content_collects_the_old_tree_and_bad_names_are_refused() {
    let (base, store) = fresh("replace");
    let old = store
        .commit(
            stage_with(&store, &[("f", "1")]),
            "t",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    let new = store
        .commit(
            stage_with(&store, &[("f", "2")]),
            "t",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    assert!(!old.rootfs.exists());
    assert!(new.rootfs.exists());
    for bad in ["host", "../x", "a/b", "", ".hidden"] {
        let err = store
            .commit(
                stage_with(&store, &[]),
                bad,
                tree_source(),
                Default::default(),
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                TemplateError::BadName(_) | TemplateError::NotFound { .. }
            ),
            "{bad}: {err}"
        );
    }
    let _ = remove_tree(&base);
}

#[test]
fn a_second_name_shares_the_tree_and_removing_one_name_keeps_the_other() {
    let (base, store) = fresh("name-as");
    let a = store
        .commit(
            stage_with(&store, &[("bin/x", "1")]),
            "a",
            tree_source(),
            Default::default(),
        )
        .unwrap();
    let b = store.name_as("a", "a:v1").unwrap();
    assert_eq!(
        (b.rootfs.clone(), b.meta.digest.clone()),
        (a.rootfs.clone(), a.meta.digest)
    );
    assert_eq!(store.names().unwrap(), vec!["a", "a:v1"]);
    store.remove("a").unwrap();
    assert!(
        b.rootfs.join("bin/x").is_file(),
        "the tree went with one of its names"
    );
    assert!(store.name_as("nope", "x").is_err());
    assert!(store.name_as("a:v1", "../x").is_err());
    let _ = remove_tree(&base);
}
