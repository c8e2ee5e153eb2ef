//! `airlock mcp` (stdio and `/mcp` on `airlock serve`) and `airlock wrap`, driven by the official
//! MCP Python SDK as the client, against the real binary. Wrapped servers are the reference
//! filesystem server (npm) and fetch server (PyPI). Network tests use loopback origins only.
#![allow(clippy::unwrap_used)]

mod common;
mod mcp_support;

use common::*;
use mcp_support::*;
use serde_json::{json, Value};
use std::path::Path;

fn mcp(cwd: &Path, flags: &[&str], steps: Value) -> Vec<Value> {
    let mut args = vec!["mcp"];
    args.extend_from_slice(flags);
    run_client(cwd, &steps, &stdio(&airlock_bin(), &args))
}

// ----- airlock mcp over stdio -----

#[test]
fn stdio_lists_tools_per_profile_and_filter() {
    let ws = TempDir::new("mcp-list");
    let steps = json!([{"list": true}]);
    let all = mcp(ws.path(), &[], steps.clone());
    assert_eq!(names(&all[0]), ["run_code", "run_command", "read_file", "write_file", "list_files", "sandbox_info"]);
    let desc = all[0]["descriptions"]["run_code"].as_str().unwrap();
    assert!(desc.contains(&ws.path().display().to_string()) && desc.contains("no network"), "{desc}");
    let ro = mcp(ws.path(), &["--profile", "read-only"], steps.clone());
    assert_eq!(names(&ro[0]), ["read_file", "list_files", "sandbox_info"], "read-only lists no tool that writes or runs");
    let narrowed = mcp(ws.path(), &["--tools", "run_code,*_file", "--deny-tools", "write_*"], steps);
    assert_eq!(names(&narrowed[0]), ["run_code", "read_file"]);
}

#[test]
fn stdio_runs_python_with_state_files_and_a_png() {
    let ws = TempDir::new("mcp-run");
    std::fs::write(ws.join("input.txt"), "from the host\n").unwrap();
    let plot = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()";
    let r = mcp(
        ws.path(),
        &[],
        json!([
            {"call": "run_code", "args": {"code": "x = 41"}},
            {"call": "run_code", "args": {"code": "print('x is', x)\nx + 1"}},
            {"call": "run_code", "args": {"code": plot}},
            {"call": "read_file", "args": {"path": "input.txt"}},
            {"call": "write_file", "args": {"path": "out/result.txt", "content": "written by the model"}},
            {"call": "run_command", "args": {"command": "cat out/result.txt; id -un"}},
            {"call": "list_files", "args": {}},
            {"call": "run_code", "args": {"code": "1/0"}},
            {"call": "run_code", "args": {"code": "console.log(6 * 7)", "language": "javascript"}},
            {"call": "sandbox_info"},
        ]),
    );
    assert!(!is_error(&r[0]), "{:?}", r[0]);
    assert_eq!(text(&r[1]), "x is 41\n42\n", "state persists across calls");
    let images = r[2]["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{:?}", r[2]);
    assert_eq!(images[0]["mime"], "image/png");
    assert_eq!(images[0]["png"], true);
    assert_eq!(text(&r[3]), "from the host\n");
    assert!(!is_error(&r[4]), "{:?}", r[4]);
    assert_eq!(std::fs::read_to_string(ws.join("out/result.txt")).unwrap(), "written by the model", "the workspace is the host directory");
    let t = text(&r[5]);
    assert!(t.contains("written by the model") && t.contains("user") && t.contains("[exit code 0]"), "{t}");
    assert!(text(&r[6]).contains("input.txt"), "{:?}", r[6]);
    assert!(is_error(&r[7]) && text(&r[7]).contains("ZeroDivisionError"), "{:?}", r[7]);
    assert!(text(&r[8]).contains("42"), "{:?}", r[8]);
    let info = text(&r[9]);
    assert!(info.contains("seccomp") && info.contains("network none"), "{info}");
}

#[test]
fn stdio_refuses_unlisted_tools_and_paths_outside_the_grants() {
    let base = TempDir::new("mcp-deny");
    let src = base.join("src");
    let other = base.join("src-other");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("secret.txt"), "host secret").unwrap();
    // The workspace appears at /workspace/src: /workspace/src-other is a sibling, not inside it.
    let ws_flag = format!("{}:/workspace/src", src.display());
    let host_secret = other.join("secret.txt").display().to_string();
    let r = mcp(
        &src,
        &["--workspace", &ws_flag, "--tools", "read_file,write_file,run_code"],
        json!([
            {"call": "run_command", "args": {"command": "touch /tmp/x"}},
            {"call": "read_file", "args": {"path": "/workspace/src-other/secret.txt"}},
            {"call": "read_file", "args": {"path": "../src-other/secret.txt"}},
            {"call": "write_file", "args": {"path": "/workspace/src-other/planted.txt", "content": "planted"}},
            {"call": "write_file", "args": {"path": "/workspace/src/../src-other/planted.txt", "content": "planted"}},
            {"call": "read_file", "args": {"path": "/etc/shadow"}},
            {"call": "run_code", "args": {"code": format!("open({host_secret:?}).read()")}},
            {"call": "read_file", "args": {"path": host_secret}},
        ]),
    );
    let t = text(&r[0]);
    assert!(is_error(&r[0]) && t.contains("run_command") && t.contains("--tools"), "a call to an unlisted tool is refused at dispatch: {t}");
    for step in &r[1..6] {
        let t = text(step);
        assert!(is_error(step) && t.contains("outside every directory") && t.contains("To allow it"), "{t}");
        assert!(!t.contains("host secret"), "{t}");
    }
    // The box enforces it too: the host path (here under /tmp, which is the box's own tmpfs)
    // does not exist inside, whether code or a file tool asks for it.
    for step in &r[6..8] {
        let t = text(step);
        assert!(is_error(step) && !t.contains("host secret"), "{t}");
    }
    assert!(!other.join("planted.txt").exists(), "the host is untouched");

    let ro = mcp(&src, &["--workspace", &ws_flag, "--profile", "read-only"], json!([{"call": "write_file", "args": {"path": "a.txt", "content": "x"}}]));
    let t = text(&ro[0]);
    assert!(is_error(&ro[0]) && t.contains("read-only") && t.contains("--profile workspace-write"), "{t}");
    assert!(!src.join("a.txt").exists());
}

#[test]
fn stdio_explains_a_denied_network_call() {
    let ws = TempDir::new("mcp-net");
    let origin = Origin::serve("<html><body>allowed page</body></html>");
    let port = origin.port;
    let code = format!(
        "import urllib.request\nprint(urllib.request.urlopen('http://svc.test:{port}/').read().decode())\ntry:\n    urllib.request.urlopen('http://other.test:{port}/')\nexcept Exception as e:\n    print('failed:', e)"
    );
    let r = mcp(
        ws.path(),
        &["--net", "proxy", "--map-host", "svc.test=127.0.0.1", "--map-host", "other.test=127.0.0.1", "--allow-domain", "svc.test", "--allow-ip", "127.0.0.1"],
        json!([{"list": true}, {"call": "run_code", "args": {"code": code}}]),
    );
    let desc = r[0]["descriptions"]["run_code"].as_str().unwrap();
    assert!(desc.contains("svc.test"), "the description names what the box may reach: {desc}");
    let t = text(&r[1]);
    assert!(t.contains("allowed page"), "{t}");
    assert!(t.contains("failed: HTTP Error 403"), "{t}");
    assert!(t.contains("airlock refused a network connection to other.test"), "the refusal is explained: {t}");
    assert_eq!(origin.hits(), 1, "only the allowed request reached the origin");
}

#[test]
fn stdio_box_is_replaced_after_the_idle_timeout() {
    let ws = TempDir::new("mcp-idle");
    let r = mcp(
        ws.path(),
        &["--idle-timeout", "1s"],
        json!([
            {"call": "run_code", "args": {"code": "x = 1"}},
            {"call": "run_code", "args": {"code": "x"}},
            {"wait": 3},
            {"call": "run_code", "args": {"code": "x"}},
        ]),
    );
    assert_eq!(text(&r[1]), "1\n");
    assert!(is_error(&r[3]) && text(&r[3]).contains("NameError"), "a fresh box after the idle timeout: {:?}", r[3]);
}

#[test]
fn bad_mcp_flags_are_refused_clearly() {
    let ws = TempDir::new("mcp-flags");
    let r = airlock(ws.path(), &["mcp", "--tools", "a b"]);
    assert_eq!(r.code, 125);
    assert!(r.stderr.contains("--tools"), "{}", r.stderr);
    let r = airlock(ws.path(), &["mcp", "--profile", "read-only", "--tools", "run_code"]);
    assert_eq!(r.code, 125);
    assert!(r.stderr.contains("no tool"), "{}", r.stderr);
}

// ----- /mcp on airlock serve -----

#[test]
fn http_mcp_needs_the_key_and_serves_tools_per_profile() {
    let data = TempDir::new("mcp-http");
    let serve = ServeProcess::start(data.path(), &[]);
    let key = serve.printed_key.clone().unwrap();
    let url = format!("{}/mcp", serve.base);
    // No key, a wrong key: refused before any MCP processing.
    let status = |auth: Option<&str>| {
        let mut req = ureq::post(&url).set("Content-Type", "application/json").set("Accept", "application/json, text/event-stream");
        if let Some(a) = auth {
            req = req.set("Authorization", a);
        }
        match req.send_string(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#) {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(s, _)) => s,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(status(None), 401);
    assert_eq!(status(Some("Bearer al_wrong")), 401);

    let http = |query: &str, steps: Value| run_client(data.path(), &steps, &["http".into(), format!("{url}{query}"), key.clone()]);
    let ro = http("?profile=read-only", json!([{"list": true}, {"call": "run_code", "args": {"code": "1"}}]));
    assert_eq!(names(&ro[0]), ["read_file", "list_files", "sandbox_info"]);
    assert!(is_error(&ro[1]) && text(&ro[1]).contains("read-only"), "{:?}", ro[1]);

    let plot = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()";
    let r = http(
        "?tools=run_code,read_file,write_file,sandbox_info",
        json!([
            {"list": true},
            {"call": "run_code", "args": {"code": "import os\nx = 20"}},
            {"call": "run_code", "args": {"code": "x * 2 + 2"}},
            {"call": "run_code", "args": {"code": plot}},
            {"call": "write_file", "args": {"path": "notes.txt", "content": "turn one"}},
            {"call": "read_file", "args": {"path": "/home/user/notes.txt"}},
            {"call": "run_command", "args": {"command": "id"}},
            {"call": "read_file", "args": {"path": "/etc/passwd"}},
            {"call": "run_code", "args": {"code": "import urllib.request\nurllib.request.urlopen('http://example.test/', timeout=5)"}},
        ]),
    );
    assert_eq!(names(&r[0]), ["run_code", "read_file", "write_file", "sandbox_info"]);
    assert_eq!(text(&r[2]), "42\n", "state persists across calls of one session");
    assert_eq!(r[3]["images"][0]["png"], true, "{:?}", r[3]);
    assert_eq!(text(&r[5]), "turn one");
    assert!(is_error(&r[6]) && text(&r[6]).contains("--tools"), "filtered tool refused: {:?}", r[6]);
    assert!(is_error(&r[7]) && text(&r[7]).contains("outside every directory"), "{:?}", r[7]);
    assert!(is_error(&r[8]), "server boxes have no network: {:?}", r[8]);

    // Each session's box ends with the session (the client deletes it on exit).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !children_with(serve.pid(), "sandbox-host").is_empty() {
        assert!(std::time::Instant::now() < deadline, "a session's box outlived its session");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
