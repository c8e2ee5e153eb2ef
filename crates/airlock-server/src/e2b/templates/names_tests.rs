use super::*;

#[test]
fn names_and_tags_map_onto_store_names_and_bad_ones_are_refused() {
    assert_eq!(split("my-tpl").unwrap(), ("my-tpl".into(), None));
    assert_eq!(
        split("my-tpl:v1").unwrap(),
        ("my-tpl".into(), Some("v1".into()))
    );
    for bad in ["", "../x", "a/b", "a:b:c", "-x", "a:", "a b"] {
        assert!(split(bad).is_err(), "{bad:?}");
    }
    assert_eq!(store_name("t", "latest"), "t");
    assert_eq!(store_name("t", "v1"), "t:v1");
    assert_eq!(store_name_of("t:latest"), "t");
    assert_eq!(store_name_of("t:v1"), "t:v1");
    assert_eq!(tag_of("t", "t"), Some("latest"));
    assert_eq!(tag_of("t:v1", "t"), Some("v1"));
    assert_eq!(tag_of("tt:v1", "t"), None);
    assert_eq!(build_tags(None, &[]), vec!["latest"]);
    assert_eq!(
        build_tags(Some("v1"), &["v2".into(), "v1".into()]),
        vec!["v1", "v2"]
    );
    let id = build_id_of_digest(&format!("sha256:{}", "ab".repeat(32)));
    assert_eq!(id, "abababab-abab-abab-abab-abababababab");
}
