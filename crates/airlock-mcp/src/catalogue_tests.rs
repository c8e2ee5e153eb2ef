#![allow(clippy::unwrap_used)]

use super::*;

fn names(c: &Catalogue) -> Vec<&'static str> {
    c.offered().into_iter().map(ToolName::as_str).collect()
}

#[test]
fn read_only_offers_no_tool_that_writes_or_runs() {
    let c = Catalogue::new(Profile::ReadOnly, ToolFilter::default());
    assert_eq!(names(&c), ["read_file", "list_files", "sandbox_info"]);
    assert_eq!(
        c.check("run_command"),
        Err(Unlisted::Profile(Profile::ReadOnly))
    );
    assert_eq!(
        c.check("write_file"),
        Err(Unlisted::Profile(Profile::ReadOnly))
    );
}

#[test]
fn workspace_write_offers_everything_and_tools_narrows() {
    let all = Catalogue::new(Profile::WorkspaceWrite, ToolFilter::default());
    assert_eq!(names(&all).len(), 6);
    let narrowed = Catalogue::new(
        Profile::WorkspaceWrite,
        ToolFilter::from_flags(&["run_code,*_file".into()], &["write_*".into()]).unwrap(),
    );
    assert_eq!(names(&narrowed), ["run_code", "read_file"]);
    assert!(matches!(
        narrowed.check("write_file"),
        Err(Unlisted::Filter(ToolVerdict::Denied { .. }))
    ));
    assert_eq!(narrowed.check("no_such_tool"), Err(Unlisted::Unknown));
}

#[test]
fn every_tool_has_an_object_schema() {
    for t in ToolName::ALL {
        assert_eq!(input_schema(t)["type"], "object", "{}", t.as_str());
        assert_eq!(ToolName::parse(t.as_str()), Some(t));
    }
}
