use super::*;
use std::os::unix::fs::PermissionsExt;

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("airlock-vault-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn secrets_survive_a_reopen_in_private_files_and_only_there() {
    let dir = tempdir("reopen");
    let v = Vault::open(&dir).expect("open");
    let a = v
        .create("openai-api-key", "sk-one", meta(&[("team", "x")]), 1_000)
        .expect("create");
    assert_eq!((a.version, a.name.as_str()), (1, "openai-api-key"));
    assert_eq!(a.id.len(), 36, "{}", a.id);
    let b = v.update(&a.name, "sk-two", None, 2_000).expect("update");
    assert_eq!((b.version, b.id.as_str()), (2, a.id.as_str()));
    assert_eq!(
        b.metadata,
        meta(&[("team", "x")]),
        "metadata kept when none is given"
    );
    assert_eq!((b.created_ms, b.updated_ms), (1_000, 2_000));
    drop(v);

    assert_eq!(
        fs::metadata(&dir).expect("dir").permissions().mode() & 0o777,
        0o700
    );
    let files: Vec<_> = fs::read_dir(&dir).expect("list").flatten().collect();
    assert_eq!(files.len(), 1, "one file per secret, no temporary left");
    assert_eq!(
        files[0].metadata().expect("file").permissions().mode() & 0o777,
        0o600
    );

    let v = Vault::open(&dir).expect("reopen");
    assert_eq!(v.get(&a.id).expect("by id"), b);
    assert_eq!(v.list(), vec![b.clone()]);
    assert_eq!(
        v.value_of("openai-api-key").expect("value").expose(),
        b"sk-two"
    );
    v.delete(&a.id).expect("delete");
    assert_eq!(
        v.get(&a.id),
        Err(VaultError::NotFound(format!(
            "secret {:?} not found (no secret has that id or name)",
            a.id
        )))
    );
    assert!(fs::read_dir(&dir).expect("list").next().is_none());
    fs::remove_dir_all(&dir).expect("clean");
}

#[test]
fn bad_input_is_refused_by_what_is_wrong_and_never_shows_the_value() {
    let v = Vault::in_memory();
    for name in ["", "a{b", "a}b", "tab\there", &"n".repeat(MAX_NAME + 1)] {
        let e = v.create(name, "sk-x", BTreeMap::new(), 0).expect_err(name);
        assert!(matches!(e, VaultError::Invalid(_)), "{e}");
    }
    for value in ["", "line\nbreak", &"v".repeat(MAX_VALUE + 1)] {
        let e = v.create("k", value, BTreeMap::new(), 0).expect_err("value");
        assert!(
            !value.is_empty() && !e.to_string().contains(value) || value.is_empty(),
            "{e}"
        );
    }
    let many: BTreeMap<String, String> = (0..=MAX_METADATA_ENTRIES)
        .map(|i| (format!("k{i}"), "v".into()))
        .collect();
    assert!(v.create("k", "sk", many, 0).is_err());
    assert!(v
        .create(
            "k",
            "sk",
            meta(&[("k", &"v".repeat(MAX_METADATA_VALUE + 1))]),
            0
        )
        .is_err());
    v.create("k", "sk-first", BTreeMap::new(), 0)
        .expect("create");
    let dup = v
        .create("k", "sk-again", BTreeMap::new(), 0)
        .expect_err("duplicate");
    assert!(
        matches!(dup, VaultError::Exists(_)) && !dup.to_string().contains("sk-"),
        "{dup}"
    );
    assert!(matches!(
        v.update("nope", "sk", None, 0),
        Err(VaultError::NotFound(_))
    ));
    assert!(matches!(v.delete("nope"), Err(VaultError::NotFound(_))));
}

#[test]
fn an_unreadable_file_stops_the_open_and_names_it() {
    let dir = tempdir("corrupt");
    fs::create_dir_all(&dir).expect("dir");
    fs::write(dir.join("x.json"), b"not json").expect("write");
    fs::write(dir.join(".tmp-y"), b"half").expect("write");
    let e = Vault::open(&dir).err().expect("refused");
    assert!(e.to_string().contains("x.json"), "{e}");
    assert!(
        !dir.join(".tmp-y").exists(),
        "an unfinished write is dropped"
    );
    fs::remove_dir_all(&dir).expect("clean");
}
