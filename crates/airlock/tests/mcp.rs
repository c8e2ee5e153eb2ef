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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    assert_eq!(
        names(&all[0]),
        [
            "run_code",
            "run_command",
            "read_file",
            "write_file",
            "list_files",
            "sandbox_info"
        ]
    );
    let desc = all[0]["descriptions"]["run_code"].as_str().unwrap();
    assert!(
        desc.contains(&ws.path().display().to_string()) && desc.contains("no network"),
        "{desc}"
    );
    let ro = mcp(ws.path(), &["--profile", "read-only"], steps.clone());
    assert_eq!(
        names(&ro[0]),
        ["read_file", "list_files", "sandbox_info"],
        "read-only lists no tool that writes or runs"
    );
    let narrowed = mcp(
        ws.path(),
        &["--tools", "run_code,*_file", "--deny-tools", "write_*"],
        steps,
    );
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
    assert_eq!(
        std::fs::read_to_string(ws.join("out/result.txt")).unwrap(),
        "written by the model",
        "the workspace is the host directory"
    );
    let t = text(&r[5]);
    assert!(
        t.contains("written by the model") && t.contains("user") && t.contains("[exit code 0]"),
        "{t}"
    );
    assert!(text(&r[6]).contains("input.txt"), "{:?}", r[6]);
    assert!(
        is_error(&r[7]) && text(&r[7]).contains("ZeroDivisionError"),
        "{:?}",
        r[7]
    );
    assert!(text(&r[8]).contains("42"), "{:?}", r[8]);
    let info = text(&r[9]);
    assert!(
        info.contains("seccomp") && info.contains("network none"),
        "{info}"
    );
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
        &[
            "--workspace",
            &ws_flag,
            "--tools",
            "read_file,write_file,run_code",
        ],
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
    assert!(
        is_error(&r[0]) && t.contains("run_command") && t.contains("--tools"),
        "a call to an unlisted tool is refused at dispatch: {t}"
    );
    for step in &r[1..6] {
        let t = text(step);
        assert!(
            is_error(step) && t.contains("outside every directory") && t.contains("To allow it"),
            "{t}"
        );
        assert!(!t.contains("host secret"), "{t}");
    }
    // The box enforces it too: the host path (here under /tmp, which is the box's own tmpfs)
    // does not exist inside, whether code or a file tool asks for it.
    for step in &r[6..8] {
        let t = text(step);
        assert!(is_error(step) && !t.contains("host secret"), "{t}");
    }
    assert!(!other.join("planted.txt").exists(), "the host is untouched");

    let ro = mcp(
        &src,
        &["--workspace", &ws_flag, "--profile", "read-only"],
        json!([{"call": "write_file", "args": {"path": "a.txt", "content": "x"}}]),
    );
    let t = text(&ro[0]);
    assert!(
        is_error(&ro[0]) && t.contains("read-only") && t.contains("--profile workspace-write"),
        "{t}"
    );
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
        &[
            "--net",
            "proxy",
            "--map-host",
            "svc.test=127.0.0.1",
            "--map-host",
            "other.test=127.0.0.1",
            "--allow-domain",
            "svc.test",
            "--allow-ip",
            "127.0.0.1",
        ],
        json!([{"list": true}, {"call": "run_code", "args": {"code": code}}]),
    );
    let desc = r[0]["descriptions"]["run_code"].as_str().unwrap();
    assert!(
        desc.contains("svc.test"),
        "the description names what the box may reach: {desc}"
    );
    let t = text(&r[1]);
    assert!(t.contains("allowed page"), "{t}");
    assert!(t.contains("failed: HTTP Error 403"), "{t}");
    assert!(
        t.contains("airlock refused a network connection to other.test"),
        "the refusal is explained: {t}"
    );
    assert_eq!(
        origin.hits(),
        1,
        "only the allowed request reached the origin"
    );
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
    assert!(
        is_error(&r[3]) && text(&r[3]).contains("NameError"),
        "a fresh box after the idle timeout: {:?}",
        r[3]
    );
}

#[test]
fn stdio_pauses_an_idle_box_in_place_and_the_next_call_resumes_it_with_its_state() {
    let ws = TempDir::new("mcp-pause");
    // What the host's v1 freezer hierarchy shows meanwhile (for the message if no pause is seen:
    // twice in full runs the ticker never stopped and airlock said nothing on stderr).
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let watching = Arc::clone(&watching);
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while watching.load(Ordering::Relaxed) {
                for e in std::fs::read_dir("/sys/fs/cgroup/freezer")
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if !name.starts_with("airlock-") {
                        continue;
                    }
                    let state =
                        std::fs::read_to_string(e.path().join("freezer.state")).unwrap_or_default();
                    let procs =
                        std::fs::read_to_string(e.path().join("cgroup.procs")).unwrap_or_default();
                    seen.insert(format!(
                        "{name} {} ({} processes)",
                        state.trim(),
                        procs.lines().count()
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            seen
        })
    };
    // --idle-timeout 45s: the box is paused after 3 s without a call (a fifteenth), ended at 45.
    // The wait leaves the check (every 750 ms) seconds of room on a loaded machine.
    let (r, stderr) = run_client_with_stderr(
        ws.path(),
        &json!([
            {"call": "run_code", "args": {"code": "x = 41"}},
            {"call": "run_command", "args": {"command":
                "(while :; do date +%s%N >> ticks; sleep 0.2; done) >/dev/null 2>&1 &"}},
            {"call": "run_command", "args": {"command": "cat /proc/self/cgroup"}},
            {"wait": 9},
            {"call": "run_code", "args": {"code": "x + 1"}},
            // The ticker must tick again after the resume, or the pause leaves no gap between
            // ticks to see: the box is ended as soon as the client leaves (CI once saw 19 ticks,
            // the freezer FROZEN, and no tick after the thaw).
            {"call": "run_command", "args": {"command": "sleep 1.5; wc -l < ticks"}},
        ]),
        &stdio(&airlock_bin(), &["mcp", "--idle-timeout", "45s"]),
    );
    watching.store(false, Ordering::Relaxed);
    let freezers = watcher.join().unwrap();
    assert_eq!(
        text(&r[4]),
        "42\n",
        "the interpreter kept its state: {:?}",
        r[4]
    );
    assert!(!is_error(&r[5]), "the call after the resume: {:?}", r[5]);
    // The ticker in the box stopped while it was paused: one gap of seconds between ticks.
    let ticks: Vec<u128> = std::fs::read_to_string(ws.join("ticks"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let gap = ticks.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    assert!(
        gap >= 2_000_000_000,
        "no pause: the longest gap between ticks was {} ms over {} ticks; airlock mcp's stderr: {stderr}; \
         the box's cgroups: {}; the host's airlock freezers seen meanwhile: {freezers:?}",
        gap / 1_000_000,
        ticks.len(),
        text(&r[2]).replace('\n', " ")
    );
}

#[test]
fn bad_mcp_flags_are_refused_clearly() {
    let ws = TempDir::new("mcp-flags");
    let r = airlock(ws.path(), &["mcp", "--tools", "a b"]);
    assert_eq!(r.code, 125);
    assert!(r.stderr.contains("--tools"), "{}", r.stderr);
    let r = airlock(
        ws.path(),
        &["mcp", "--profile", "read-only", "--tools", "run_code"],
    );
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
        let mut req = ureq::post(&url)
            .set("Content-Type", "application/json")
            .set("Accept", "application/json, text/event-stream");
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

    let http = |query: &str, steps: Value| {
        run_client(
            data.path(),
            &steps,
            &["http".into(), format!("{url}{query}"), key.clone()],
        )
    };
    let ro = http(
        "?profile=read-only",
        json!([{"list": true}, {"call": "run_code", "args": {"code": "1"}}]),
    );
    assert_eq!(names(&ro[0]), ["read_file", "list_files", "sandbox_info"]);
    assert!(
        is_error(&ro[1]) && text(&ro[1]).contains("read-only"),
        "{:?}",
        ro[1]
    );

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
    assert_eq!(
        names(&r[0]),
        ["run_code", "read_file", "write_file", "sandbox_info"]
    );
    assert_eq!(
        text(&r[2]),
        "42\n",
        "state persists across calls of one session"
    );
    assert_eq!(r[3]["images"][0]["png"], true, "{:?}", r[3]);
    assert_eq!(text(&r[5]), "turn one");
    assert!(
        is_error(&r[6]) && text(&r[6]).contains("--tools"),
        "filtered tool refused: {:?}",
        r[6]
    );
    assert!(
        is_error(&r[7]) && text(&r[7]).contains("outside every directory"),
        "{:?}",
        r[7]
    );
    assert!(is_error(&r[8]), "server boxes have no network: {:?}", r[8]);

    // Each session's box ends with the session (the client deletes it on exit).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !box_hosts(serve.pid()).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "a session's box outlived its session"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn http_mcp_boxes_share_the_servers_max_running_slots() {
    let data = TempDir::new("mcp-http-cap");
    let serve = ServeProcess::start(data.path(), &["--max-running", "1"]);
    let key = serve.printed_key.clone().unwrap();
    let url = format!("{}/mcp", serve.base);
    // The only slot is taken by a REST sandbox...
    let created = ureq::post(&format!("{}/v1/sandboxes", serve.base))
        .set("Authorization", &format!("Bearer {key}"))
        .send_string("{}")
        .unwrap();
    let id = serde_json::from_str::<Value>(&created.into_string().unwrap()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let http = |steps: Value| {
        run_client(
            data.path(),
            &steps,
            &["http".into(), url.clone(), key.clone()],
        )
    };
    // ...so an MCP session's first box is refused, readably, and no box is started for it.
    let r = http(json!([{"call": "run_code", "args": {"code": "1 + 1"}}]));
    assert!(
        is_error(&r[0]) && text(&r[0]).contains("--max-running"),
        "{:?}",
        r[0]
    );
    assert_eq!(
        box_hosts(serve.pid()).len(),
        1,
        "only the REST sandbox's box runs"
    );
    // Once the slot is free, the session gets its box.
    let gone = ureq::delete(&format!("{}/v1/sandboxes/{id}", serve.base))
        .set("Authorization", &format!("Bearer {key}"))
        .call()
        .unwrap();
    assert!(gone.status() < 300);
    let r = http(json!([{"call": "run_code", "args": {"code": "1 + 1"}}]));
    assert_eq!(text(&r[0]), "2\n", "{:?}", r[0]);
}

// ----- airlock wrap -----

fn wrap(cwd: &Path, flags: &[&str], server: &[&str], steps: Value) -> Vec<Value> {
    let mut args = vec!["wrap"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(server);
    run_client(cwd, &steps, &stdio(&airlock_bin(), &args))
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}"))
        })
        .collect()
}

#[test]
fn wrap_filters_the_filesystem_server_and_confines_its_writes() {
    let base = TempDir::new("wrap-fs");
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello from the host\n").unwrap();
    let audit = base.join("audit.jsonl");
    let (npm, server) = (
        npm_dir().display().to_string(),
        filesystem_server().display().to_string(),
    );
    let p = |p: &Path| p.display().to_string();
    // The server itself is told it may use the whole filesystem: only the box confines it.
    let r = wrap(
        &ws,
        &[
            "--read",
            &npm,
            "--tools",
            "read_*,write_file,list_*,move_file",
            "--deny-tools",
            "move_*,read_media_file",
            "--audit",
            &p(&audit),
        ],
        &["node", &server, "/"],
        json!([
            {"list": true},
            {"call": "read_text_file", "args": {"path": p(&ws.join("hello.txt"))}},
            {"call": "write_file", "args": {"path": p(&ws.join("made.txt")), "content": "inside"}},
            {"call": "write_file", "args": {"path": p(&outside.join("escaped.txt")), "content": "outside"}},
            {"call": "write_file", "args": {"path": "/usr/escaped.txt", "content": "outside"}},
            {"call": "move_file", "args": {"source": p(&ws.join("hello.txt")), "destination": p(&outside.join("moved.txt"))}},
            {"call": "create_directory", "args": {"path": p(&ws.join("newdir"))}},
        ]),
    );
    let listed = names(&r[0]);
    assert!(
        listed.contains(&"read_text_file".to_string())
            && listed.contains(&"write_file".to_string()),
        "{listed:?}"
    );
    for hidden in [
        "move_file",
        "read_media_file",
        "create_directory",
        "edit_file",
    ] {
        assert!(
            !listed.contains(&hidden.to_string()),
            "{hidden} must be filtered out: {listed:?}"
        );
    }
    assert_eq!(text(&r[1]), "hello from the host\n");
    assert!(!is_error(&r[2]), "{:?}", r[2]);
    assert_eq!(
        std::fs::read_to_string(ws.join("made.txt")).unwrap(),
        "inside"
    );
    // The attacks: writes outside the granted directory fail, and the host is untouched.
    assert!(is_error(&r[3]) && is_error(&r[4]), "{:?} {:?}", r[3], r[4]);
    assert!(
        !outside.join("escaped.txt").exists() && !Path::new("/usr/escaped.txt").exists(),
        "the host is untouched"
    );
    // Filtered tools are refused by airlock, without reaching the server.
    for step in [&r[5], &r[6]] {
        let t = text(step);
        assert!(is_error(step) && t.starts_with("airlock refused"), "{t}");
    }
    assert!(
        ws.join("hello.txt").exists()
            && !outside.join("moved.txt").exists()
            && !ws.join("newdir").exists()
    );
    let calls: Vec<Value> = audit_lines(&audit)
        .into_iter()
        .filter(|l| l["kind"] == "tool_call")
        .collect();
    let summary: Vec<(String, String)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("read_text_file", "ok"),
        ("write_file", "ok"),
        ("write_file", "error"),
        ("write_file", "error"),
        ("move_file", "refused"),
        ("create_directory", "refused"),
    ];
    assert_eq!(
        summary,
        expected.map(|(a, b)| (a.to_string(), b.to_string())),
        "{calls:#?}"
    );
    assert!(calls.iter().all(
        |c| c["arguments_sha256"].as_str().unwrap().len() == 64 && c["duration_ms"].is_number()
    ));
}

#[test]
fn wrap_limits_the_fetch_servers_network_to_the_allowlist() {
    let ws = TempDir::new("wrap-fetch");
    let audit = ws.join("audit.jsonl");
    let origin = Origin::serve(
        "<html><head><title>t</title></head><body><p>the allowed page says hello</p></body></html>",
    );
    let port = origin.port;
    let venv = fetch_venv().display().to_string();
    let server = fetch_server().display().to_string();
    let r = wrap(
        ws.path(),
        &[
            "--read",
            &venv,
            "--net",
            "proxy",
            "--map-host",
            "svc.test=127.0.0.1",
            "--map-host",
            "other.test=127.0.0.1",
            "--allow-domain",
            "svc.test",
            "--allow-ip",
            "127.0.0.1",
            "--audit",
            &audit.display().to_string(),
        ],
        // httpx does not take the box's ALL_PROXY (socks5h://), so the server is pointed at the
        // proxy's HTTP side explicitly.
        &[
            &server,
            "--ignore-robots-txt",
            "--proxy-url",
            "http://127.0.0.1:3128",
        ],
        json!([
            {"list": true},
            {"call": "fetch", "args": {"url": format!("http://svc.test:{port}/page"), "raw": true}},
            {"call": "fetch", "args": {"url": format!("http://other.test:{port}/page"), "raw": true}},
        ]),
    );
    assert_eq!(names(&r[0]), ["fetch"]);
    assert!(
        !is_error(&r[1]) && text(&r[1]).contains("the allowed page says hello"),
        "{:?}",
        r[1]
    );
    let t = text(&r[2]);
    assert!(is_error(&r[2]) && t.contains("403"), "{t}");
    assert_eq!(
        origin.hits(),
        1,
        "only the allowed fetch reached the origin"
    );
    let lines = audit_lines(&audit);
    let denied: Vec<&Value> = lines.iter().filter(|l| l["decision"] == "deny").collect();
    assert!(
        denied.iter().any(|l| l["host"] == "other.test"),
        "the refusal is in the audit log: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["decision"] == "allow" && l["host"] == "svc.test"),
        "{lines:#?}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["kind"] == "tool_call" && l["tool"] == "fetch")
            .count(),
        2,
        "{lines:#?}"
    );
}

#[test]
fn wrap_reports_a_crash_of_the_wrapped_server() {
    let base = TempDir::new("wrap-crash");
    let marker = base.join("granted");
    std::fs::create_dir_all(&marker).unwrap();
    let audit = base.join("audit.jsonl");
    let (npm, server) = (
        npm_dir().display().to_string(),
        filesystem_server().display().to_string(),
    );
    let ws = marker.display().to_string();
    let r = wrap(
        &marker,
        &["--read", &npm, "--audit", &audit.display().to_string()],
        &["node", &server, &ws],
        json!([
            {"call": "list_allowed_directories", "args": {}},
            {"kill": ws},
            {"wait": 1},
            {"call": "list_allowed_directories", "args": {}},
            {"list": true},
        ]),
    );
    assert!(!is_error(&r[0]), "{:?}", r[0]);
    assert_eq!(
        r[1]["killed"].as_array().map(Vec::len),
        Some(1),
        "{:?}",
        r[1]
    );
    for step in [&r[3], &r[4]] {
        let e = step["error"]
            .as_str()
            .unwrap_or_else(|| panic!("the crash must be reported: {step}"));
        assert!(
            e.contains("the wrapped MCP server is gone") && e.contains("signal 9"),
            "{e}"
        );
    }
    let calls: Vec<Value> = audit_lines(&audit)
        .into_iter()
        .filter(|l| l["kind"] == "tool_call")
        .collect();
    assert_eq!(
        calls.last().unwrap()["status"],
        "server_ended",
        "{calls:#?}"
    );
    assert!(
        pids_with_marker(&ws).is_empty(),
        "the wrapped server's processes are gone once the client left"
    );
}

// ----- airlock wrap: messages that other parsers read differently -----

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// What the wrapped server ran, one tool per line of its record file.
fn ran(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// A `tools/call` of read_x with id `id`, which the allowlist permits.
fn read_x(id: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_x","arguments":{{}}}}}}"#
    )
}

/// Runs the attack lines (`line`, the id airlock must answer with, a word its refusal must
/// contain) against `server` wrapped with `--tools read_x`, between two allowed calls, and checks
/// that every attack was refused, that the server ran read_x and nothing else, that the victim
/// file is untouched, that the audit says what was refused, and that nothing is left running.
fn assert_wrap_refuses(tag: &str, read: &Path, server: &[&str], attacks: &[(String, Value, &str)]) {
    let base = TempDir::new(tag);
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let victim = ws.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let (record, audit) = (ws.join("ran.txt"), base.join("audit.jsonl"));
    let p = |p: &Path| p.display().to_string();
    let (read, audit_s, record_s) = (p(read), p(&audit), p(&record));
    let mut args = vec![
        "wrap", "--read", &read, "--tools", "read_x", "--audit", &audit_s, "--",
    ];
    args.extend_from_slice(server);
    args.push(&record_s);
    let mut c = RawClient::start(&airlock_bin(), &ws, &args);
    let init = c.ask(INIT);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let ok = c.ask(&read_x(1));
    assert_eq!(ok["result"]["content"][0]["text"], "ran read_x", "{ok}");
    for (line, id, needle) in attacks {
        let line = line.replace("VICTIM", &p(&victim));
        let a = c.ask(&line);
        assert!(
            a["error"]["code"] == -32600 && a["id"] == *id && a.get("result").is_none(),
            "the attack must be refused with an error: {line}\ngot {a}"
        );
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{msg}");
    }
    // The server answers in order: once this is answered, it has seen all that was forwarded.
    let ok = c.ask(&read_x(99));
    assert_eq!(ok["result"]["content"][0]["text"], "ran read_x", "{ok}");
    assert_eq!(c.finish(), 0, "airlock wrap exits cleanly");
    assert_eq!(
        ran(&record),
        ["read_x", "read_x"],
        "delete_everything never ran"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious",
        "the host is untouched"
    );
    let lines = audit_lines(&audit);
    let refused: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "invalid_message")
        .collect();
    assert_eq!(refused.len(), attacks.len(), "{lines:#?}");
    for (rec, (_, _, needle)) in refused.iter().zip(attacks) {
        assert_eq!(rec["from"], "client", "{rec}");
        assert!(rec["reason"].as_str().unwrap().contains(needle), "{rec}");
        assert_eq!(rec["line_sha256"].as_str().unwrap().len(), 64, "{rec}");
    }
    let calls: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["kind"] == "tool_call")
        .map(|l| (l["tool"].as_str().unwrap(), l["status"].as_str().unwrap()))
        .collect();
    assert_eq!(calls, [("read_x", "ok"), ("read_x", "ok")], "{lines:#?}");
    assert_nothing_left_in(&ws, "airlock wrap after its client left");
}

#[test]
fn wrap_refuses_case_variant_keys_that_a_go_server_would_obey() {
    // Go's encoding/json matches keys to struct fields case-insensitively (Unicode folding: ſ is
    // s) and keeps the last match; serde_json, and so the gate, read the exact key.
    let server = go_mcp_server();
    let call =
        |id: &str, rest: &str| format!(r#"{{"jsonrpc":"2.0",{id}"method":"tools/call",{rest}}}"#);
    let attacks = [
        (
            call(
                r#""id":2,"#,
                r#""params":{"name":"read_x","Name":"delete_everything","arguments":{"path":"VICTIM"}}"#,
            ),
            json!(2),
            "\"Name\"",
        ),
        // The gate saw no id (a notification, forwarded unchecked); Go reads ID as the id.
        (
            call(
                r#""ID":3,"#,
                r#""params":{"name":"delete_everything","arguments":{"path":"VICTIM"}}"#,
            ),
            Value::Null,
            "\"ID\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","Method":"tools/call","params":{"name":"delete_everything","arguments":{"path":"VICTIM"}}}"#.to_string(),
            json!(4),
            "\"Method\"",
        ),
        (
            call(
                r#""id":5,"#,
                r#""params":{"name":"read_x"},"Params":{"name":"delete_everything","arguments":{"path":"VICTIM"}}"#,
            ),
            json!(5),
            "\"Params\"",
        ),
        (
            call(
                r#""id":6,"#,
                "\"params\":{\"name\":\"read_x\"},\"param\u{17f}\":{\"name\":\"delete_everything\",\"arguments\":{\"path\":\"VICTIM\"}}",
            ),
            json!(6),
            "param\u{17f}",
        ),
        (
            call(
                r#""id":7,"#,
                r#""params":{"name":"read_x","arguments":{"path":"VICTIM"},"NAME":"delete_everything"}"#,
            ),
            json!(7),
            "\"NAME\"",
        ),
    ];
    let dir = server.parent().unwrap();
    let server = server.display().to_string();
    assert_wrap_refuses("wrap-go-case", dir, &[&server], &attacks);
}

#[test]
fn wrap_refuses_duplicate_keys_that_a_first_key_server_would_obey() {
    // serde_json, and so the gate, keep the last of duplicate keys; this server keeps the first.
    let script = first_key_server();
    let attacks = [
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_everything","name":"read_x","arguments":{"path":"VICTIM"}}}"#.to_string(),
            json!(2),
            "\"name\" appears twice in params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","method":"tools/list","params":{"name":"delete_everything","arguments":{"path":"VICTIM"}}}"#.to_string(),
            json!(3),
            "\"method\" appears twice",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_everything","arguments":{"path":"VICTIM"}},"params":{"name":"read_x"}}"#.to_string(),
            json!(4),
            "\"params\" appears twice",
        ),
    ];
    let dir = script.parent().unwrap().canonicalize().unwrap();
    let script = script.display().to_string();
    assert_wrap_refuses("wrap-first-key", &dir, &["python3", &script], &attacks);
}

// ----- without root -----

#[test]
fn an_unprivileged_user_gets_the_same_mcp_and_wrap() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert!(
        is_root(),
        "this test must run as root (it switches to {TEST_USER})"
    );
    let (uid, gid, _home) = ensure_test_user();
    let (_bin_dir, bin) = binary_for_test_user("mcp-unpriv-bin");
    let ws = TempDir::new("mcp-unpriv-ws");
    std::os::unix::fs::chown(ws.path(), Some(uid), Some(gid)).unwrap();
    let as_user = |args: &[&str]| {
        let mut v = vec![
            "stdio".to_string(),
            "setpriv".into(),
            "--reuid".into(),
            TEST_USER.into(),
            "--regid".into(),
            TEST_USER.into(),
            "--init-groups".into(),
            "--".into(),
        ];
        v.push(bin.display().to_string());
        v.extend(args.iter().map(|a| a.to_string()));
        v
    };
    let r = run_client(
        ws.path(),
        &json!([
            {"call": "run_code", "args": {"code": "import os\nn = 6"}},
            {"call": "run_code", "args": {"code": "n * 7"}},
            {"call": "write_file", "args": {"path": "by-model.txt", "content": "x"}},
            {"call": "read_file", "args": {"path": "/root/.bashrc"}},
        ]),
        &as_user(&["mcp"]),
    );
    assert_eq!(text(&r[1]), "42\n");
    assert!(!is_error(&r[2]), "{:?}", r[2]);
    assert_eq!(
        std::fs::metadata(ws.join("by-model.txt")).unwrap().uid(),
        uid,
        "files the box writes belong to the caller"
    );
    assert!(is_error(&r[3]), "{:?}", r[3]);

    // The test user may not be able to traverse the checkout: give it its own copy of the server.
    let npm_copy = TempDir::new("mcp-unpriv-npm");
    std::fs::set_permissions(npm_copy.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(npm_dir().join("node_modules"))
        .arg(npm_copy.path())
        .status()
        .unwrap();
    assert!(copied.success(), "copy the filesystem server");
    let npm = npm_copy.path().display().to_string();
    let server = npm_copy
        .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
        .display()
        .to_string();
    let outside = TempDir::new("mcp-unpriv-outside");
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = run_client(
        ws.path(),
        &json!([
            {"call": "write_file", "args": {"path": ws.join("wrapped.txt").display().to_string(), "content": "ok"}},
            {"call": "write_file", "args": {"path": outside.join("escaped.txt").display().to_string(), "content": "no"}},
            {"call": "move_file", "args": {"source": "a", "destination": "b"}},
        ]),
        &as_user(&[
            "wrap",
            "--read",
            &npm,
            "--deny-tools",
            "move_file",
            "--",
            "node",
            &server,
            "/",
        ]),
    );
    assert!(!is_error(&r[0]), "{:?}", r[0]);
    assert_eq!(
        std::fs::read_to_string(ws.join("wrapped.txt")).unwrap(),
        "ok"
    );
    assert!(
        is_error(&r[1]) && !outside.join("escaped.txt").exists(),
        "the host is untouched: {:?}",
        r[1]
    );
    assert!(
        is_error(&r[2]) && text(&r[2]).contains("--deny-tools"),
        "{:?}",
        r[2]
    );
}

#[test]
fn nothing_outlives_the_client() {
    // airlock mcp: a box with a running interpreter and a background process.
    let ws = TempDir::new("mcp-left");
    let r = mcp(
        ws.path(),
        &[],
        json!([
            {"call": "run_code", "args": {"code": "import subprocess\nsubprocess.Popen(['sleep', '300'])\n1"}},
            {"call": "run_command", "args": {"command": "(setsid sleep 300 &) ; echo started"}},
        ]),
    );
    assert!(!is_error(&r[1]), "{:?}", r[1]);
    assert_nothing_left_in(ws.path(), "airlock mcp after its client left");

    // airlock wrap: the wrapped server and its box.
    let ws2 = TempDir::new("wrap-left");
    let (npm, server) = (
        npm_dir().display().to_string(),
        filesystem_server().display().to_string(),
    );
    let dir = ws2.path().display().to_string();
    let r = wrap(
        ws2.path(),
        &["--read", &npm],
        &["node", &server, &dir],
        json!([{"call": "list_allowed_directories", "args": {}}]),
    );
    assert!(!is_error(&r[0]), "{:?}", r[0]);
    assert_nothing_left_in(ws2.path(), "airlock wrap after its client left");
    assert!(
        pids_with_marker(&dir).is_empty(),
        "the wrapped server is gone"
    );
}
