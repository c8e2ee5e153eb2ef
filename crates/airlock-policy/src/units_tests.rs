#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert_eq!(parse_size("512M").unwrap(), 512 << 20);
    assert_eq!(parse_size("512m").unwrap(), 512 << 20);
    assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
    assert_eq!(parse_size("2GB").unwrap(), 2 << 30);
    assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
    assert_eq!(parse_size("10 K").unwrap(), 10 << 10);
    for bad in ["", "M", "12Q", "-1", "1.5", "1e9", "abc", "1..2G"] {
        assert!(parse_size(bad).is_err(), "{bad:?} should be refused");
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    for bad in ["", "s", "10d", "-3s", "abc"] {
        assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
    }
}
