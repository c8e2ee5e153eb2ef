#![allow(clippy::unwrap_used)]

use super::*;
use airlock_policy::Profile;

#[test]
fn denials_name_the_rule_and_the_grant() {
    let d = Denial::tool("write_file", &Unlisted::Profile(Profile::ReadOnly));
    let t = d.text();
    assert!(
        t.contains("write_file")
            && t.contains("read-only")
            && t.contains("--profile workspace-write"),
        "{t}"
    );
    let d = Denial::tool(
        "run_command",
        &Unlisted::Filter(ToolVerdict::NotAllowed {
            allow: "read_*".into(),
        }),
    );
    assert!(
        d.text().contains("add run_command to --tools"),
        "{}",
        d.text()
    );
    let d = Denial::path(
        "write /etc/x",
        &PathDenied::Outside {
            path: "/etc/x".into(),
            roots: "/w".into(),
        },
    );
    assert!(d.text().contains("--write /etc/x"), "{}", d.text());
}
