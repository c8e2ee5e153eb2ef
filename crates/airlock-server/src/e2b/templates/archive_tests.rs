use super::*;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("airlock-e2b-archive-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("store")).unwrap();
    d
}

/// A tar of `entries` (path, kind, data), as the tar crate writes it, never checking paths.
fn tar_of(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_mode(if *kind == tar::EntryType::Directory {
            0o755
        } else {
            0o644
        });
        let name = h.as_old_mut().name.as_mut();
        name[..path.len()].copy_from_slice(path.as_bytes());
        match kind {
            tar::EntryType::Symlink | tar::EntryType::Link => {
                h.set_link_name(std::str::from_utf8(data).unwrap()).unwrap();
                h.set_size(0);
            }
            _ => h.set_size(data.len() as u64),
        }
        h.set_cksum();
        let body: &[u8] = if kind.is_file() { data } else { &[] };
        b.append(&h, body).unwrap();
    }
    b.into_inner().unwrap()
}

/// The Python SDK's hash of one file `rel` with `content` (mode 0644).
fn python_hash(src: &str, dest: &str, rel: &str, content: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(format!("COPY {src} {dest}"));
    h.update(rel);
    h.update((0o100644u32).to_string());
    h.update(content.len().to_string());
    h.update(content);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn read_bytes(tag: &str, bytes: &[u8], hash: &str) -> Result<Vec<CopyEntry>, ArchiveError> {
    let d = dir(tag);
    let up = d.join("upload");
    std::fs::write(&up, bytes).unwrap();
    read(&up, &d.join("store"), 0, ("a.txt", "/app/", hash), 1 << 20)
}

#[test]
fn a_file_whose_hash_matches_is_kept_in_a_numbered_file_and_a_gzip_is_read_too() {
    let tar = tar_of(&[("a.txt", tar::EntryType::Regular, b"hello\n")]);
    let hash = python_hash("a.txt", "/app/", "a.txt", b"hello\n");
    let got = read_bytes("ok", &tar, &hash).unwrap();
    let [CopyEntry::File { rel, mode, stored }] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!((rel.as_str(), *mode), ("a.txt", 0o644));
    assert_eq!(std::fs::read(stored).unwrap(), b"hello\n");
    assert!(stored.ends_with("store/0"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    assert_eq!(
        read_bytes("gz", &gz.finish().unwrap(), &hash)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn an_upload_that_does_not_hold_what_its_hash_claims_is_refused() {
    let tar = tar_of(&[("a.txt", tar::EntryType::Regular, b"other\n")]);
    let hash = python_hash("a.txt", "/app/", "a.txt", b"hello\n");
    let err = read_bytes("mismatch", &tar, &hash).unwrap_err();
    assert!(matches!(err, ArchiveError::HashMismatch { .. }), "{err}");
}

#[test]
fn paths_that_leave_the_context_links_and_devices_are_refused() {
    type Entries<'a> = &'a [(&'a str, tar::EntryType, &'a [u8])];
    let cases: &[(Entries, &str)] = &[
        (&[("../x", tar::EntryType::Regular, b"x")], "`..`"),
        (&[("a/../../x", tar::EntryType::Regular, b"x")], "`..`"),
        (&[("/etc/x", tar::EntryType::Regular, b"x")], "absolute"),
        (
            &[
                ("l", tar::EntryType::Symlink, b"/etc"),
                ("l/passwd", tar::EntryType::Regular, b"x"),
            ],
            "below a symlink",
        ),
        (&[("h", tar::EntryType::Link, b"/etc/passwd")], "hard link"),
        (&[("d", tar::EntryType::Char, b"")], "not a file"),
        (
            &[
                ("a", tar::EntryType::Regular, b"1"),
                ("./a", tar::EntryType::Regular, b"2"),
            ],
            "twice",
        ),
    ];
    for (i, (entries, why)) in cases.iter().enumerate() {
        let err = read_bytes(&format!("bad{i}"), &tar_of(entries), "00").unwrap_err();
        assert!(err.to_string().contains(why), "case {i}: {err}");
    }
}

#[test]
fn more_unpacked_bytes_than_the_cap_are_refused() {
    let big = vec![b'x'; 2 << 20];
    let err = read_bytes(
        "big",
        &tar_of(&[("a.txt", tar::EntryType::Regular, &big)]),
        "00",
    )
    .unwrap_err();
    assert!(matches!(err, ArchiveError::TooBig { .. }), "{err}");
}
