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

#[test]
fn random_hex_gives_the_bytes_asked_for_and_never_the_same() {
    // More than one getrandom call may be needed past 256 bytes; every byte is filled.
    let a = random_hex(1000).unwrap();
    let b = random_hex(1000).unwrap();
    assert_eq!(a.len(), 2000);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
    // Not a buffer left at zero somewhere: every 100-byte window has non-zero bytes.
    for w in a.as_bytes().chunks(200) {
        assert!(w.iter().any(|&c| c != b'0'), "{a}");
    }
    assert_eq!(random_hex(0).unwrap(), "");
}
