#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn the_reserve_grows_with_the_boxes_and_caps_connections() {
    let b = DescriptorBudget::new(2048, 16).unwrap();
    assert_eq!(b.reserve, 128 + 3 * 16);
    assert_eq!(b.ceiling, 2048 - 176);
    assert_eq!(b.fit(4096), 1872);
    assert_eq!(b.fit(100), 100);
}

#[test]
fn a_limit_too_small_for_the_reserve_is_refused_with_the_fix() {
    let err = DescriptorBudget::new(190, 16).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("open-file limit (ulimit -n) is 190"), "{msg}");
    assert!(msg.contains("raise"), "{msg}");
}
