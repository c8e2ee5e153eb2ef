//! The tools over the fake backend: what each call does with its arguments, the roots it
//! enforces and what it answers, in milliseconds and without root. `crates/airlock/tests/mcp.rs`
//! runs the same tools in real boxes through real MCP clients.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::boxes::{BackendStarter, BoxSlot};
use airlock_runtime::backend::fake::FakeBackend;
use airlock_runtime::backend::Backends;
use std::path::PathBuf;
use std::sync::Arc;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn setup(tag: &str) -> (Dir, CallEnv, BoxSlot) {
    let dir = std::env::temp_dir().join(format!("airlock-mcp-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = Dir(std::fs::canonicalize(&dir).unwrap());
    let file = airlock_policy::PolicyFile {
        workspace: Some(dir.0.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let env = std::collections::BTreeMap::new();
    let policy = airlock_policy::resolve(
        &file,
        &airlock_policy::ResolveContext {
            cwd: dir.0.clone(),
            env: &env,
            host: &airlock_runtime::RealHost,
        },
    )
    .unwrap();
    let backends = Backends::new(vec![Arc::new(
        FakeBackend::beside_test_binary().unwrap_or_else(|e| panic!("{e}")),
    )]);
    let starter = Arc::new(BackendStarter::new(backends));
    let env = CallEnv {
        roots: Roots::of(&policy),
        info: "the box".into(),
    };
    (dir, env, BoxSlot::new(policy, starter))
}

fn args(v: serde_json::Value) -> JsonObject {
    v.as_object().unwrap().clone()
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn commands_and_files_go_through_the_box_and_stay_inside_the_roots() {
    let (dir, env, mut slot) = setup("calls");
    let out = call(
        ToolName::RunCommand,
        &args(serde_json::json!({"command": "echo hello; echo oops >&2; exit 3"})),
        &env,
        &mut slot,
    );
    let t = text(&out);
    assert!(
        t.contains("hello") && t.contains("oops") && t.contains('3'),
        "{t}"
    );
    let path = dir.0.join("note.txt");
    let p = path.to_string_lossy().into_owned();
    let out = call(
        ToolName::WriteFile,
        &args(serde_json::json!({"path": p, "content": "kept between calls"})),
        &env,
        &mut slot,
    );
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "kept between calls"
    );
    let out = call(
        ToolName::ReadFile,
        &args(serde_json::json!({"path": p})),
        &env,
        &mut slot,
    );
    assert!(text(&out).contains("kept between calls"), "{}", text(&out));
    // Outside the roots: refused before the box is asked.
    let out = call(
        ToolName::WriteFile,
        &args(serde_json::json!({"path": "/etc/airlock-mcp-test", "content": "x"})),
        &env,
        &mut slot,
    );
    assert!(out.is_error, "{}", text(&out));
    assert!(!std::path::Path::new("/etc/airlock-mcp-test").exists());
    let out = call(
        ToolName::RunCommand,
        &args(serde_json::json!({"command": 7})),
        &env,
        &mut slot,
    );
    assert!(
        out.is_error && text(&out).contains("must be a string"),
        "{}",
        text(&out)
    );
    slot.end();
}
