#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

#[test]
fn times_are_utc() {
    assert_eq!(utc(0), "1970-01-01 00:00:00");
    assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
    assert_eq!(utc(1_700_000_000_999), "2023-11-14 22:13:20");
}

#[test]
fn the_table_is_aligned_and_shows_metadata() {
    let rows = [
        json!({"id": "sbx_a", "state": "running", "template": "base", "created_ms": 0, "deadline_ms": 300_000, "metadata": {"team": "a", "x": "1"}}),
        json!({"id": "sbx_long_id", "state": "killed", "template": "user", "created_ms": 0, "deadline_ms": 0, "metadata": {}}),
    ];
    let t = table(&rows);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with("ID           STATE    TEMPLATE  CREATED"),
        "{t}"
    );
    assert!(
        lines[1].contains("1970-01-01 00:05:00") && lines[1].ends_with("team=a,x=1"),
        "{t}"
    );
    assert!(lines[2].ends_with(" -"), "{t}");
    assert_eq!(lines[1].find("running"), lines[2].find("killed"));
}
