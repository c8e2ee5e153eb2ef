use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn network_logs_are_new_private_files_with_distinct_names() {
    let a = new_net_log().unwrap();
    let b = new_net_log().unwrap();
    assert_ne!(a, b);
    for p in [&a, &b] {
        let meta = std::fs::symlink_metadata(p).unwrap();
        assert!(meta.is_file() && meta.len() == 0, "{p:?}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{p:?}");
        std::fs::remove_file(p).unwrap();
    }
}
