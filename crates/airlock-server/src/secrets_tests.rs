#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn api_keys_have_the_documented_shape() {
    let k = new_api_key().unwrap();
    assert!(k.starts_with("al_") && k.len() == 67, "{k}");
    assert!(k[3..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(k, new_api_key().unwrap());
}

#[test]
fn hashes_compare_by_value() {
    let h = hash("abc");
    assert_eq!(
        h,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(same_hash(&h, &hash("abc")));
    assert!(!same_hash(&h, &hash("abd")));
    assert!(!same_hash(&h, "short"));
}
