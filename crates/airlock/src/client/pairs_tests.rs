#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn pairs_split_at_the_first_equals_sign() {
    let m = pairs("--env", &["A=1".into(), "B=x=y".into(), "C=".into()]).unwrap();
    assert_eq!(m["A"], "1");
    assert_eq!(m["B"], "x=y");
    assert_eq!(m["C"], "");
}

#[test]
fn malformed_or_repeated_pairs_are_refused() {
    assert!(pairs("--metadata", &["novalue".into()])
        .unwrap_err()
        .to_string()
        .contains("KEY=VALUE"));
    assert!(pairs("--metadata", &["=v".into()]).is_err());
    assert!(pairs("--metadata", &["a=1".into(), "a=2".into()])
        .unwrap_err()
        .to_string()
        .contains("twice"));
}
