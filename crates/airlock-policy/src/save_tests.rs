use super::*;

#[test]
fn a_grant_is_added_and_the_rest_of_the_file_is_kept() {
    let text = "# my policy\nprofile = \"workspace-write\"\n\n[network]\n# the API we use\nallow_domain = [\"api.example:443\"]\nmode = \"proxy\"\n";
    let out = with_grant(text, GrantList::AllowDomain, "svc.test:8080")
        .expect("edits")
        .expect("changed");
    assert!(out.contains("# my policy"), "{out}");
    assert!(out.contains("# the API we use"), "{out}");
    assert!(out.contains("profile = \"workspace-write\""), "{out}");
    let file = PolicyFile::from_toml(&out, Path::new("p.toml")).expect("still a policy");
    let net = file.network;
    assert_eq!(net.allow_domain, ["api.example:443", "svc.test:8080"]);
}

#[test]
fn a_missing_table_and_list_are_made_and_a_present_grant_is_not_repeated() {
    let out = with_grant(
        "profile = \"read-only\"\n",
        GrantList::AllowIp,
        "93.184.216.34/32:443",
    )
    .expect("edits")
    .expect("changed");
    let file = PolicyFile::from_toml(&out, Path::new("p.toml")).expect("still a policy");
    assert_eq!(file.network.allow_ip, ["93.184.216.34/32:443"]);
    assert_eq!(
        with_grant(&out, GrantList::AllowIp, "93.184.216.34/32:443").expect("edits"),
        None
    );
}

#[test]
fn a_file_that_is_not_editable_is_refused_and_left_alone() {
    assert!(with_grant("network = 3\n", GrantList::AllowDomain, "a.test:1").is_err());
    assert!(with_grant(
        "[network]\nallow_domain = \"x\"\n",
        GrantList::AllowDomain,
        "a:1"
    )
    .is_err());
    let dir = std::env::temp_dir().join(format!("airlock-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bad.toml");
    // Valid TOML, but not a policy once edited (an unknown key): nothing is written.
    std::fs::write(&path, "surprise = 1\n").expect("write");
    let err = save_grant(&path, GrantList::AllowDomain, "a.test:1").expect_err("refused");
    assert!(err.to_string().contains("bad.toml"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "surprise = 1\n"
    );
    std::fs::write(&path, "[network]\nmode = \"proxy\"\n").expect("write");
    assert!(save_grant(&path, GrantList::AllowDomain, "a.test:1").expect("saved"));
    assert!(!save_grant(&path, GrantList::AllowDomain, "a.test:1").expect("saved"));
    let left: Vec<_> = std::fs::read_dir(&dir).expect("list").collect();
    assert_eq!(left.len(), 1, "no temporary file is left behind");
    let _ = std::fs::remove_dir_all(&dir);
}
