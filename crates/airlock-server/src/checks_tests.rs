#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn each_refusal_names_its_field_and_rule() {
    let e = sandbox_timeout_ms("timeout", 0).unwrap_err();
    assert_eq!(e.field, "timeout");
    assert!(e
        .to_string()
        .starts_with("timeout is invalid: give whole seconds from 1 to 86400"));
    assert_eq!(sandbox_timeout_ms("timeout", 86_400).unwrap(), 86_400_000);
    assert!(run_timeout("timeout", Some(-1.0)).is_err());
    assert!(run_timeout("timeout", Some(f64::NAN)).is_err());
    assert!(run_timeout("timeout", Some(0.0)).is_err());
    assert!(run_timeout("timeout", Some(86_400.0)).unwrap().is_some());
    assert_eq!(absolute_path("cwd", "tmp").unwrap_err().field, "cwd");
    assert!(absolute_path("cwd", "").is_err());
    assert!(absolute_path("cwd", "/a\0b").is_err());
    assert!(absolute_path("cwd", "/").is_ok());
    assert_eq!(argv("cmd", &["a\0".into()]).unwrap_err().field, "cmd[0]");
    assert!(argv("cmd", &[]).is_err());
    let env = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    assert!(run_env("env", &env("A=B", "1")).is_err());
    assert!(run_env("env", &env("", "1")).is_err());
    assert!(run_env("env", &env("a-b", "x")).is_ok());
    assert!(box_env("env", &env("a-b", "x")).is_err());
    assert!(box_env("env", &env("_A1", "x")).is_ok());
    assert!(box_env("env", &env("A", "\0")).is_err());
}

#[test]
fn metadata_bounds_count_characters() {
    let key = "é".repeat(MAX_METADATA_KEY_CHARS);
    let ok = BTreeMap::from([(key.clone(), "ü".repeat(MAX_METADATA_VALUE_CHARS))]);
    assert!(metadata("metadata", &ok).is_ok());
    let long = BTreeMap::from([(key + "x", String::new())]);
    assert!(metadata("metadata", &long).is_err());
    assert!(metadata(
        "metadata",
        &BTreeMap::from([(String::new(), String::new())])
    )
    .is_err());
    let many: BTreeMap<String, String> = (0..=MAX_METADATA_PAIRS)
        .map(|i| (i.to_string(), String::new()))
        .collect();
    assert!(metadata("metadata", &many).is_err());
    assert_eq!(list_depth("?depth=", 0).unwrap_err().field, "?depth=");
    assert_eq!(
        list_depth("?depth=", MAX_LIST_DEPTH).unwrap(),
        MAX_LIST_DEPTH
    );
}
