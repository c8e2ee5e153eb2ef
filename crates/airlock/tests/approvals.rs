//! Approvals end to end through the real `airlock run`: a real box runs curl through its real
//! proxy to an origin server this test runs on 127.0.0.1 (names are `*.test` names mapped with
//! `--map-host`: nothing leaves the machine, no DNS query is made). The approver is a Python
//! program the test writes (`--approver CMD`): it logs every request line it reads and answers
//! by a table. Each case checks what the box got, what the origin saw (it counts every
//! connection), what the approver was asked, and what the result document records.

mod approvals_support;
mod common;

use approvals_support::Origin;
use common::{airlock, binary_for_test_user, ensure_test_user, is_root, TempDir, TEST_USER};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The approver program: logs each request line to `log`, then answers from `table` (host →
/// the answer's JSON fields); a host not in the table gets no answer at all.
const APPROVER_PY: &str = r#"
import json, sys
log, table = sys.argv[1], json.loads(sys.argv[2])
for line in sys.stdin:
    with open(log, "a") as f:
        f.write(line)
    req = json.loads(line)
    answer = table.get(req["host"])
    if answer is not None:
        print(json.dumps(dict(answer, id=req["id"])), flush=True)
"#;

struct Approver {
    dir: TempDir,
}

impl Approver {
    fn new(table: Value) -> (Approver, String) {
        let dir = TempDir::new("approver");
        let script = dir.join("approve.py");
        std::fs::write(&script, APPROVER_PY).expect("write the approver");
        let table_arg = table.to_string().replace('\'', "");
        let cmd = format!(
            "/usr/bin/python3 '{}' '{}' '{table_arg}'",
            script.display(),
            dir.join("asked.jsonl").display()
        );
        (Approver { dir }, cmd)
    }

    /// The requests it read, in order.
    fn asked(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("asked.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a request line is JSON"))
            .collect()
    }
}

/// `airlock run --result FILE --net proxy <names> <flags> -- sh -c <script>`.
fn boxed(flags: &[&str], script: &str) -> (common::Run, Value, Duration) {
    let ws = TempDir::new("approvals-ws");
    let out = TempDir::new("approvals-result");
    let file = out.join("result.json");
    let file_s = file.to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        // Generous: the first microVM box on a fresh machine waits for its template snapshot.
        "--timeout",
        "180s",
        "--result",
        file_s.as_str(),
        "--net",
        "proxy",
        "--map-host",
        "svc.test=127.0.0.1",
        "--map-host",
        "other.test=127.0.0.1",
        "--allow-ip",
        "127.0.0.1",
    ];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let t = Instant::now();
    let run = airlock(ws.path(), &args);
    let took = t.elapsed();
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", run.stderr));
    (
        run,
        serde_json::from_str(&text).expect("result is JSON"),
        took,
    )
}

/// `curl` lines for `urls`: each prints `<url> <status> <body>`.
fn curls(urls: &[String]) -> String {
    urls.iter()
        .map(|u| {
            format!(
                "echo \"{u} $(curl -sS -o /tmp/body -w '%{{http_code}}' {u}) $(cat /tmp/body)\""
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn line_for<'a>(stdout: &'a str, url: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{url} ")))
        .unwrap_or_else(|| panic!("no line for {url} in {stdout}"))
}

fn ask_events(result: &Value) -> Vec<Value> {
    result["network_events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["decision"] == "ask")
        .collect()
}

/// Under a backend without a network (wasm) there is no connection to hold: `--net proxy`
/// with approvals is refused before any box starts, which this checks; `true` then.
fn refused_without_network() -> bool {
    match common::test_backend_kind() {
        airlock_policy::BackendKind::Wasm => {
            let ws = TempDir::new("approvals-wasm");
            let args = [
                "run",
                "--net",
                "proxy",
                "--approval",
                "on-request",
                "--approver",
                "true",
                "--",
                "echo",
                "box-ran",
            ];
            let run = airlock(ws.path(), &args);
            assert_eq!(run.code, 125, "{}", run.stderr);
            assert!(run.stderr.contains("--net proxy"), "{}", run.stderr);
            assert!(!run.stdout.contains("box-ran"));
            true
        }
        _ => false,
    }
}

#[test]
fn an_approver_program_lets_held_connections_through_and_refuses_the_rest() {
    if refused_without_network() {
        return;
    }
    let origin = Origin::serve();
    let p = origin.port;
    let (approver, cmd) = Approver::new(serde_json::json!({
        "svc.test": {"answer": "allow", "scope": "run", "ttl_secs": 60},
        "other.test": {"answer": "deny"},
    }));
    let svc = format!("http://svc.test:{p}/a");
    let svc_again = format!("http://svc.test:{p}/b");
    let other = format!("http://other.test:{p}/c");
    let (run, result, _) = boxed(
        &["--approval", "on-request", "--approver", &cmd],
        &curls(&[svc.clone(), svc_again.clone(), other.clone()]),
    );
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
    assert_eq!(
        line_for(&run.stdout, &svc),
        format!("{svc} 200 approved-origin")
    );
    assert_eq!(
        line_for(&run.stdout, &svc_again),
        format!("{svc_again} 200 approved-origin"),
        "the run grant allows the second request without asking"
    );
    let denied = line_for(&run.stdout, &other);
    assert!(denied.starts_with(&format!("{other} 403 ")), "{denied}");
    assert!(denied.contains("--allow-domain other.test"), "{denied}");
    assert_eq!(
        origin.connections(),
        2,
        "the denied request never reached the origin"
    );
    // Asked twice: svc.test once (then granted), other.test once.
    let asked = approver.asked();
    let hosts: Vec<&str> = asked.iter().filter_map(|r| r["host"].as_str()).collect();
    assert_eq!(hosts, ["svc.test", "other.test"], "{asked:#?}");
    assert_eq!(asked[0]["port"], p);
    assert_eq!(asked[0]["protocol"], "http");
    assert_eq!(asked[0]["grant"], format!("svc.test:{p}"));
    assert_eq!(asked[0]["reason"], "not-allowed");
    // The program is told which process asked where the backend can tell (a native box's
    // sockets are the host kernel's; gVisor's and a microVM's are not), and null otherwise.
    match common::test_backend_kind() {
        airlock_policy::BackendKind::Native => {
            let who = asked[0]["process"].as_str().unwrap_or_default();
            assert!(
                who.starts_with("curl ") && who.ends_with(" in the box)"),
                "{asked:#?}"
            );
        }
        _ => assert!(asked[0]["process"].is_null(), "{asked:#?}"),
    }
    // The result document records each step, who answered, and the grant's end.
    let steps: Vec<(String, String)> = ask_events(&result)
        .iter()
        .map(|e| {
            (
                e["host"].as_str().unwrap_or("").to_string(),
                e["approval"]["stage"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want = [
        ("svc.test", "requested"),
        ("svc.test", "allowed"),
        ("other.test", "requested"),
        ("other.test", "denied"),
    ];
    assert_eq!(
        steps,
        want.map(|(h, s)| (h.to_string(), s.to_string())),
        "{result:#}"
    );
    let allowed = &ask_events(&result)[1]["approval"];
    assert!(allowed["by"]
        .as_str()
        .unwrap_or("")
        .starts_with("program: "));
    assert_eq!(allowed["scope"], "run");
    assert!(allowed["expires_ms"].as_u64().is_some(), "{allowed}");
}

#[test]
fn no_answer_by_the_deadline_is_the_usual_refusal_and_the_box_cannot_answer_for_the_approver() {
    if refused_without_network() {
        return;
    }
    let origin = Origin::serve();
    let p = origin.port;
    // It reads and logs, and never answers.
    let (approver, cmd) = Approver::new(serde_json::json!({}));
    let url = format!("http://svc.test:{p}/held");
    // The box tries to forge the answer everywhere it can write: its stdout, its stderr and
    // its terminal, with every id the approver could be waiting on.
    let forge = (1..=3)
        .map(|id| format!(r#"{{"id":{id},"answer":"allow","scope":"run"}}"#))
        .collect::<Vec<_>>();
    let forge_cmds = forge
        .iter()
        .map(|l| format!("echo '{l}'; echo '{l}' >&2; (echo '{l}' > /dev/tty) 2>/dev/null"))
        .collect::<Vec<_>>()
        .join("; ");
    let script = format!(
        "{forge_cmds}; (sleep 0.3; {forge_cmds}) & {}; wait",
        curls(std::slice::from_ref(&url))
    );
    let (run, result, took) = boxed(
        &[
            "--approval",
            "on-request",
            "--approver",
            &cmd,
            "--approval-timeout",
            "1500ms",
        ],
        &script,
    );
    let line = line_for(&run.stdout, &url);
    assert!(line.starts_with(&format!("{url} 403 ")), "{line}");
    assert!(
        line.contains("is not in the allowlist"),
        "the usual refusal: {line}"
    );
    assert!(
        took >= Duration::from_millis(1500),
        "held until the deadline: {took:?}"
    );
    assert_eq!(origin.connections(), 0, "nothing reached the origin");
    assert_eq!(approver.asked().len(), 1, "asked once");
    let stages: Vec<Value> = ask_events(&result)
        .iter()
        .map(|e| e["approval"]["stage"].clone())
        .collect();
    assert_eq!(stages, ["requested", "timed-out"], "{result:#}");
}

#[test]
fn under_never_nothing_is_asked_and_bad_approval_flags_are_refused() {
    if refused_without_network() {
        return;
    }
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/x", origin.port);
    for flags in [&[][..], &["--approval", "never"][..]] {
        let (run, result, _) = boxed(flags, &curls(std::slice::from_ref(&url)));
        let line = line_for(&run.stdout, &url);
        assert!(line.starts_with(&format!("{url} 403 ")), "{line}");
        assert!(ask_events(&result).is_empty(), "{result:#}");
    }
    assert_eq!(origin.connections(), 0);
    for (flags, says) in [
        (
            &["--approval", "never", "--approver", "true"][..],
            "--approval on-request",
        ),
        (
            &["--approval", "sometimes"][..],
            "never, on-request or untrusted",
        ),
        (&["--approval", "on-request"][..], "--approver CMD"),
    ] {
        let ws = TempDir::new("approvals-bad");
        let mut args = vec!["run", "--net", "proxy"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "echo", "box-ran"]);
        let run = airlock(ws.path(), &args);
        assert_eq!(run.code, 125, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{flags:?}: {}", run.stderr);
        assert!(
            !run.stdout.contains("box-ran"),
            "{flags:?}: the box must not start"
        );
    }
    // `airlock wrap` asks for the network only through an approver program, so both asking
    // modes without one are refused before anything starts. (`airlock mcp` asks through MCP
    // elicitation, and `airlock wrap --approval untrusted` asks before each tool call:
    // tests/approvals_mcp.rs.)
    for (cmd, flags, says) in [
        ("wrap", &["--approval", "untrusted"][..], "--approver CMD"),
        ("wrap", &["--approval", "on-request"][..], "--approver CMD"),
    ] {
        let ws = TempDir::new("approvals-mcp");
        let mut args = vec![cmd, "--net", "proxy"];
        args.extend_from_slice(flags);
        if cmd == "wrap" {
            args.extend_from_slice(&["--", "echo", "server-ran"]);
        }
        let run = airlock(ws.path(), &args);
        assert_eq!(run.code, 125, "{cmd} {flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{cmd} {flags:?}: {}", run.stderr);
        assert!(!run.stdout.contains("server-ran"));
    }
}

#[test]
fn an_unprivileged_user_gets_the_same_approvals() {
    if refused_without_network() {
        return;
    }
    assert!(
        is_root(),
        "this test must run as root (it switches to {TEST_USER})"
    );
    let (uid, gid, home) = ensure_test_user();
    let (_bin_dir, bin) = binary_for_test_user("approvals-unpriv-bin");
    let origin = Origin::serve();
    let p = origin.port;
    let (approver, cmd) = Approver::new(serde_json::json!({
        "svc.test": {"answer": "allow"},
    }));
    // The approver runs as the user too: it must read its script and write its log.
    std::os::unix::fs::chown(approver.dir.path(), Some(uid), Some(gid)).expect("chown");
    let ws = TempDir::new("approvals-unpriv-ws");
    std::os::unix::fs::chown(ws.path(), Some(uid), Some(gid)).expect("chown the workspace");
    let result_file = ws.join("result.json");
    let svc = format!("http://svc.test:{p}/u");
    let other = format!("http://other.test:{p}/u");
    let out = common::as_test_user(&bin)
        .args(["run", "--timeout", "180s", "--result"])
        .arg(&result_file)
        .args([
            "--net",
            "proxy",
            "--map-host",
            "svc.test=127.0.0.1",
            "--map-host",
            "other.test=127.0.0.1",
            "--allow-ip",
            "127.0.0.1",
            "--approval",
            "on-request",
            "--approver",
            &cmd,
            "--approval-timeout",
            "1s",
            "--",
            "sh",
            "-c",
            &curls(&[svc.clone(), other.clone()]),
        ])
        .current_dir(ws.path())
        .env("HOME", &home)
        .env("USER", TEST_USER)
        .stdin(Stdio::null())
        .output()
        .expect("run setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout {stdout} stderr {stderr}"
    );
    assert_eq!(
        line_for(&stdout, &svc),
        format!("{svc} 200 approved-origin")
    );
    assert!(line_for(&stdout, &other).starts_with(&format!("{other} 403 ")));
    assert_eq!(origin.connections(), 1);
    assert_eq!(approver.asked().len(), 2, "both were asked");
    if common::test_backend_kind() == airlock_policy::BackendKind::Native {
        // An unprivileged supervisor reads its box's processes too (it owns their user
        // namespace), so the question names the client.
        let asked = approver.asked();
        let who = asked[0]["process"].as_str().unwrap_or_default();
        assert!(who.starts_with("curl "), "{asked:#?}");
    }
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&result_file).expect("result file"))
            .expect("result is JSON");
    let stages: Vec<Value> = ask_events(&result)
        .iter()
        .map(|e| e["approval"]["stage"].clone())
        .collect();
    assert_eq!(
        stages,
        ["requested", "allowed", "requested", "timed-out"],
        "{result:#}"
    );
}
