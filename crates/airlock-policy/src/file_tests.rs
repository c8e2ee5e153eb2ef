#![allow(clippy::unwrap_used)]
use super::*;
use std::time::Duration;

#[test]
fn full_file_parses() {
    let text = r#"
profile = "read-only"
workspace = "/src:/workspace"
fail_if_unavailable = true
[filesystem]
read = ["/opt/data"]
write = ["/tmp/out"]
deny = ["/src/secrets"]
[network]
mode = "host"
[limits]
memory = "512M"
pids = 128
cpus = 1.5
timeout = "30s"
disk = 1048576
output_limit = "10M"
[env]
pass = ["CI"]
set = { RUST_LOG = "debug" }
"#;
    let p = PolicyFile::from_toml(text, Path::new("p.toml")).unwrap();
    assert_eq!(p.profile, Some(Profile::ReadOnly));
    assert_eq!(p.limits.memory, Some(SizeValue(512 << 20)));
    assert_eq!(p.limits.disk, Some(SizeValue(1 << 20)));
    assert_eq!(
        p.limits.timeout,
        Some(DurationValue(Duration::from_secs(30)))
    );
    assert_eq!(p.network.mode, Some(NetworkMode::Host));
    assert_eq!(p.env.set.get("RUST_LOG").map(String::as_str), Some("debug"));
}

#[test]
fn unknown_keys_are_errors() {
    for text in [
        "profil = \"read-only\"",
        "[limits]\nmemroy = \"1G\"",
        "[filesystem]\nreads = []",
        "[network]\nallow = []",
    ] {
        let err = PolicyFile::from_toml(text, Path::new("p.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown field"), "{text:?} gave {msg}");
        assert!(msg.contains("p.toml"), "error names the file: {msg}");
    }
}

#[test]
fn bad_values_are_errors() {
    for text in [
        "profile = \"root\"",
        "[limits]\nmemory = \"lots\"",
        "[limits]\ntimeout = \"soon\"",
    ] {
        assert!(
            PolicyFile::from_toml(text, Path::new("p.toml")).is_err(),
            "{text:?}"
        );
    }
}

#[test]
fn flags_override_file() {
    let file = PolicyFile::from_toml(
        "profile = \"read-only\"\n[limits]\nmemory = \"1G\"\npids = 10\n[filesystem]\nread = [\"/a\"]",
        Path::new("p.toml"),
    )
    .unwrap();
    let mut flags = PolicyFile::default();
    flags.limits.memory = Some(SizeValue(5));
    flags.filesystem.read.push("/b".into());
    let merged = file.merge(flags);
    assert_eq!(merged.profile, Some(Profile::ReadOnly));
    assert_eq!(merged.limits.memory, Some(SizeValue(5)));
    assert_eq!(merged.limits.pids, Some(10));
    assert_eq!(
        merged.filesystem.read,
        vec!["/a".to_string(), "/b".to_string()]
    );
}

#[test]
fn changes_mode_parses_and_unknown_values_name_the_choices() {
    let ok =
        PolicyFile::from_toml("[filesystem]\nchanges = \"direct\"\n", Path::new("p.toml")).unwrap();
    assert_eq!(ok.filesystem.changes, Some(crate::ChangesMode::Direct));
    let err = PolicyFile::from_toml("[filesystem]\nchanges = \"later\"\n", Path::new("p.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("apply") && err.contains("direct"), "{err}");
    let flag = "later".parse::<crate::ChangesMode>().unwrap_err();
    assert!(
        flag.contains("use apply") && flag.contains("or direct"),
        "{flag}"
    );
}
