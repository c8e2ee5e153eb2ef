#![allow(clippy::unwrap_used)]

use super::*;
use airlock_mcp::ToolName;

#[test]
fn the_query_picks_profile_and_tools() {
    let names = |q: &str| {
        settings(q).map(|s| {
            s.tool_names()
                .into_iter()
                .map(ToolName::as_str)
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        names("profile=read-only").unwrap(),
        ["read_file", "list_files", "sandbox_info"]
    );
    assert_eq!(
        names("tools=run_code,sandbox_info").unwrap(),
        ["run_code", "sandbox_info"]
    );
    assert_eq!(names("").unwrap().len(), 6);
    assert!(settings("profile=full-access")
        .err()
        .unwrap_or_default()
        .contains("refused"));
    assert!(settings("profile=read-only&tools=run_code").is_err());
    assert!(settings("workspace=/").is_err());
}
