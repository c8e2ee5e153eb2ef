#![allow(clippy::unwrap_used)]
use super::super::{Store, StoreError};

#[test]
fn api_key_hash_is_stored_and_replaced() {
    let store = Store::open_in_memory().unwrap();
    assert_eq!(store.api_key_hash("default").unwrap(), None);
    store.set_api_key_hash("default", "argon2:one").unwrap();
    assert_eq!(
        store.api_key_hash("default").unwrap().as_deref(),
        Some("argon2:one")
    );
    store.set_api_key_hash("default", "argon2:two").unwrap();
    assert_eq!(
        store.api_key_hash("default").unwrap().as_deref(),
        Some("argon2:two")
    );
    assert_eq!(store.api_key_hash("other").unwrap(), None);
    assert!(matches!(
        store.set_api_key_hash("", "h"),
        Err(StoreError::Empty { .. })
    ));
}
