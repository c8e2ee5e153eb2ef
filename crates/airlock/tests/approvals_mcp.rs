//! Approvals through `airlock mcp`, driven by the official MCP Python SDK as the client
//! (`mcp_support/client.py`, which declares elicitation and answers `elicitation/create` from
//! a scripted list when a test asks it to). `--approval untrusted` asks before each command;
//! `request_network_grant` lets the model ask for a destination, and only the person says yes.
//! Network cases use a loopback origin and `*.test` names mapped with `--map-host` (no DNS).
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

fn asked(step: &Value) -> Vec<String> {
    step["asked"]
        .as_array()
        .unwrap_or_else(|| panic!("not an asked step: {step}"))
        .iter()
        .map(|m| m.as_str().unwrap_or("").to_string())
        .collect()
}

const UNTRUSTED: &[&str] = &["--net", "proxy", "--approval", "untrusted"];

#[test]
fn untrusted_asks_before_each_command_and_a_declined_one_never_runs() {
    let ws = TempDir::new("mcp-untrusted");
    let logs = TempDir::new("mcp-untrusted-audit");
    let audit = logs.join("audit.jsonl").display().to_string();
    let mut flags = UNTRUSTED.to_vec();
    flags.extend_from_slice(&["--audit", &audit]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            {"elicit": ["accept", "decline", "cancel"]},
            {"call": "run_command", "args": {"command": "touch accepted-marker"}},
            {"call": "run_command", "args": {"command": "touch declined-marker"}},
            {"call": "run_code", "args": {"code": "open('cancelled-marker', 'w').write('x')"}},
            {"call": "list_files", "args": {}},
            {"asked": true},
        ]),
    );
    assert!(!is_error(&r[1]), "{:?}", r[1]);
    assert!(
        ws.join("accepted-marker").exists(),
        "the accepted command ran"
    );
    for (i, marker) in [(2, "declined-marker"), (3, "cancelled-marker")] {
        assert!(is_error(&r[i]), "{:?}", r[i]);
        let t = text(&r[i]);
        assert!(t.contains("airlock did not run it"), "{t}");
        assert!(t.contains("Nothing was run"), "{t}");
        assert!(
            !ws.join(marker).exists(),
            "{marker}: a refused command must never run"
        );
    }
    assert!(text(&r[2]).contains("the user declined"));
    assert!(
        !is_error(&r[4]),
        "reading tools are not asked about: {:?}",
        r[4]
    );
    let asked = asked(&r[5]);
    assert_eq!(
        asked.len(),
        3,
        "one question per command, none for list_files: {asked:?}"
    );
    assert!(asked[0].contains("run_command") && asked[0].contains("touch accepted-marker"));
    assert!(asked[1].contains("touch declined-marker"));
    assert!(asked[2].contains("run_code") && asked[2].contains("cancelled-marker"));
    // Every question and its answer is in the audit log, with who answered.
    let answers: Vec<(String, String, String)> = audit_lines(&audit)
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            assert_eq!(l["by"], "mcp-client", "{l}");
            (s("tool"), s("subject"), s("answer"))
        })
        .collect();
    assert_eq!(
        answers,
        [
            (
                "run_command".into(),
                "touch accepted-marker".into(),
                "allowed".into()
            ),
            (
                "run_command".into(),
                "touch declined-marker".into(),
                "denied".into()
            ),
            (
                "run_code".into(),
                "open('cancelled-marker', 'w').write('x')".into(),
                "denied".into()
            ),
        ]
    );
}

/// The JSON lines of an audit log.
fn audit_lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no audit log at {path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[test]
fn untrusted_runs_nothing_for_a_client_that_cannot_be_asked_or_does_not_answer_in_time() {
    let ws = TempDir::new("mcp-untrusted-none");
    let r = mcp(
        ws.path(),
        UNTRUSTED,
        json!([{"call": "run_command", "args": {"command": "touch unasked-marker"}}]),
    );
    assert!(is_error(&r[0]), "{:?}", r[0]);
    let t = text(&r[0]);
    assert!(t.contains("did not declare elicitation"), "{t}");
    assert!(
        t.contains("--approval on-request"),
        "the refusal says what to do: {t}"
    );
    assert!(!ws.join("unasked-marker").exists());
    // A yes that comes after the deadline is no yes: the command never runs.
    let mut flags = UNTRUSTED.to_vec();
    flags.extend_from_slice(&["--approval-timeout", "1s"]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            {"elicit": [{"action": "accept", "wait": 3}]},
            {"call": "run_command", "args": {"command": "touch late-marker"}},
            {"wait": 3},
        ]),
    );
    assert!(is_error(&r[1]), "{:?}", r[1]);
    assert!(
        text(&r[1]).contains("nobody answered within 1 s"),
        "{:?}",
        r[1]
    );
    assert!(
        !ws.join("late-marker").exists(),
        "a late yes must not run it"
    );
}

/// `--net proxy` to a loopback origin named `svc.test` (and `other.test`, `late.test`), none allowed,
/// approvals on.
fn grant_flags() -> Vec<&'static str> {
    vec![
        "--net",
        "proxy",
        "--map-host",
        "svc.test=127.0.0.1",
        "--map-host",
        "other.test=127.0.0.1",
        "--map-host",
        "late.test=127.0.0.1",
        "--allow-ip",
        "127.0.0.1",
        "--approval",
        "on-request",
    ]
}

fn curl(host: &str, port: u16) -> Value {
    json!({"call": "run_command", "args": {"command": format!("curl -sS -w ' %{{http_code}}' http://{host}:{port}/")}})
}

fn grant(host: &str, port: u16) -> Value {
    json!({"call": "request_network_grant", "args": {"host": host, "port": port, "reason": "fetch the test page"}})
}

#[test]
fn a_grant_the_person_accepts_opens_exactly_that_destination() {
    let ws = TempDir::new("mcp-grant-yes");
    let logs = TempDir::new("mcp-grant-yes-audit");
    let audit = logs.join("audit.jsonl").display().to_string();
    let origin = Origin::serve("granted page");
    let p = origin.port;
    let mut flags = grant_flags();
    flags.extend_from_slice(&["--audit", &audit]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            // The held connection to svc.test is declined, the model's grant accepted, and
            // the held one to other.test declined (past the list).
            {"elicit": ["decline", "accept"]},
            {"list": true},
            curl("svc.test", p),
            // Never asked about: a private address is not granted this way.
            grant("127.0.0.1", p),
            grant("svc.test", p),
            curl("svc.test", p),
            curl("other.test", p),
            {"asked": true},
        ]),
    );
    assert!(names(&r[1]).contains(&"request_network_grant".to_string()));
    let refused = text(&r[2]);
    assert!(refused.contains(" 403"), "{refused}");
    assert!(
        refused.contains(&format!("--allow-domain svc.test:{p}")),
        "the refusal names the exact grant: {refused}"
    );
    assert!(
        is_error(&r[3]) && text(&r[3]).contains("not a public address"),
        "{:?}",
        r[3]
    );
    assert!(!is_error(&r[4]), "{:?}", r[4]);
    assert!(
        text(&r[4]).contains(&format!("Allowed svc.test:{p}")),
        "{:?}",
        r[4]
    );
    let through = text(&r[5]);
    assert!(through.contains("granted page 200"), "{through}");
    let other = text(&r[6]);
    assert!(
        other.contains(" 403"),
        "only the granted destination opened: {other}"
    );
    assert_eq!(origin.hits(), 1);
    let asked = asked(&r[7]);
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[0].contains(&format!("connecting to svc.test:{p}")),
        "{asked:?}"
    );
    assert!(
        asked[1].contains(&format!("svc.test:{p}")) && asked[1].contains("fetch the test page"),
        "{asked:?}"
    );
    assert!(
        asked[2].contains(&format!("connecting to other.test:{p}")),
        "{asked:?}"
    );
    // The audit log has each question and its answer, and the box's network decisions around
    // them: held and refused, then allowed once granted, then held and refused for the other
    // name.
    let lines = audit_lines(&audit);
    let approvals: Vec<(String, String, String)> = lines
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            assert_eq!(l["by"], "mcp-client", "{l}");
            (s("tool"), s("subject"), s("answer"))
        })
        .collect();
    let (svc, other) = (format!("svc.test:{p}"), format!("other.test:{p}"));
    assert_eq!(
        approvals,
        [
            ("held_connection".into(), svc.clone(), "denied".into()),
            (
                "request_network_grant".into(),
                svc.clone(),
                "allowed".into()
            ),
            ("held_connection".into(), other.clone(), "denied".into()),
        ],
        "{lines:#?}"
    );
    let grant_line = lines
        .iter()
        .find(|l| l["tool"] == "request_network_grant")
        .unwrap();
    assert_eq!(grant_line["reason"], "fetch the test page");
    assert_eq!(
        decisions(&lines, p),
        [
            ("svc.test".into(), "ask".into(), "requested".into()),
            ("svc.test".into(), "ask".into(), "denied".into()),
            ("svc.test".into(), "deny".into(), String::new()),
            ("svc.test".into(), "allow".into(), String::new()),
            ("other.test".into(), "ask".into(), "requested".into()),
            ("other.test".into(), "ask".into(), "denied".into()),
            ("other.test".into(), "deny".into(), String::new()),
        ],
        "{lines:#?}"
    );
}

/// The box's network decisions for port `p` in the audit log: host, decision, approval stage.
fn decisions(lines: &[Value], p: u16) -> Vec<(String, String, String)> {
    lines
        .iter()
        .filter(|l| l["kind"].is_null() && l["port"] == p)
        .map(|l| {
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            (s(&l["host"]), s(&l["decision"]), s(&l["approval"]["stage"]))
        })
        .collect()
}

/// A connection the policy does not allow, made by the very command the model is running, is
/// held while the person is asked through elicitation: a yes lets it (and later ones to that
/// destination) through before the command ends; a no refuses it at once with the usual
/// refusal; no answer in time is a refusal at the deadline, and a late yes opens nothing.
#[test]
fn a_held_connection_is_asked_through_elicitation_while_its_command_runs() {
    let ws = TempDir::new("mcp-held");
    let logs = TempDir::new("mcp-held-audit");
    let audit = logs.join("audit.jsonl").display().to_string();
    let origin = Origin::serve("held page");
    let p = origin.port;
    let mut flags = grant_flags();
    flags.extend_from_slice(&["--audit", &audit, "--approval-timeout", "2s"]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            {"elicit": ["accept", "decline", {"action": "accept", "wait": 4}]},
            // Asked, allowed; the second curl in the same command is not asked again.
            {"call": "run_command", "args": {"command": format!(
                "curl -sS -w ' %{{http_code}}' http://svc.test:{p}/; echo; curl -sS -w ' %{{http_code}}' http://svc.test:{p}/again")}},
            curl("other.test", p),
            curl("late.test", p),
            {"asked": true},
        ]),
    );
    let allowed = text(&r[1]);
    assert_eq!(
        allowed.matches("held page 200").count(),
        2,
        "both went through: {allowed}"
    );
    let denied = text(&r[2]);
    assert!(denied.contains(" 403"), "{denied}");
    assert!(
        denied.contains(&format!("--allow-domain other.test:{p}")),
        "the refusal names the exact grant: {denied}"
    );
    let late = text(&r[3]);
    assert!(late.contains(" 403"), "{late}");
    assert_eq!(
        origin.hits(),
        2,
        "only the allowed requests reached the origin"
    );
    let asked = asked(&r[4]);
    assert_eq!(asked.len(), 3, "{asked:?}");
    for (q, host) in asked.iter().zip(["svc.test", "other.test", "late.test"]) {
        assert!(q.contains(&format!("connecting to {host}:{p}")), "{q}");
    }
    let lines = audit_lines(&audit);
    let answers: Vec<String> = lines
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| l["answer"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(answers, ["allowed", "denied", "timed-out"], "{lines:#?}");
    let stages: Vec<(String, String)> = decisions(&lines, p)
        .into_iter()
        .filter(|(_, d, _)| d == "ask")
        .map(|(h, _, s)| (h, s))
        .collect();
    assert_eq!(
        stages,
        [
            ("svc.test".into(), "requested".into()),
            ("svc.test".into(), "allowed".into()),
            ("other.test".into(), "requested".into()),
            ("other.test".into(), "denied".into()),
            ("late.test".into(), "requested".into()),
            ("late.test".into(), "timed-out".into()),
        ],
        "{lines:#?}"
    );
}

#[test]
fn a_grant_the_person_declines_is_not_made() {
    let ws = TempDir::new("mcp-grant-no");
    let origin = Origin::serve("never served");
    let p = origin.port;
    let r = mcp(
        ws.path(),
        &grant_flags(),
        json!([
            {"elicit": ["decline"]},
            grant("svc.test", p),
            curl("svc.test", p),
        ]),
    );
    assert!(is_error(&r[1]), "{:?}", r[1]);
    assert!(text(&r[1]).contains("the user declined"), "{:?}", r[1]);
    assert!(text(&r[2]).contains(" 403"), "{:?}", r[2]);
    assert_eq!(origin.hits(), 0);
}

#[test]
fn a_client_without_elicitation_gets_the_grant_that_would_allow_it() {
    let ws = TempDir::new("mcp-grant-none");
    let data = TempDir::new("mcp-grant-none-data");
    let d = data.path().canonicalize().unwrap().display().to_string();
    let origin = Origin::serve("never served");
    let p = origin.port;
    let r = mcp(
        ws.path(),
        &grant_flags(),
        json!([
            curl("svc.test", p),
            grant("svc.test", p),
            curl("svc.test", p),
            path_grant(&d, "read"),
        ]),
    );
    let t = text(&r[3]);
    assert!(is_error(&r[3]) && t.contains("cannot grant itself"), "{t}");
    assert!(
        t.contains(&format!(
            "--read {d} (in a policy file: [filesystem] read = [\"{d}\"])"
        )),
        "{t}"
    );
    let refused = text(&r[0]);
    assert!(
        refused.contains(&format!("--allow-domain svc.test:{p}")),
        "{refused}"
    );
    assert!(is_error(&r[1]), "{:?}", r[1]);
    let t = text(&r[1]);
    assert!(t.contains("cannot grant itself"), "{t}");
    assert!(t.contains(&format!("--allow-domain svc.test:{p}")), "{t}");
    assert!(
        t.contains(&format!("[network] allow_domain = [\"svc.test:{p}\"]")),
        "{t}"
    );
    assert!(
        text(&r[2]).contains(" 403"),
        "nothing was granted: {:?}",
        r[2]
    );
    assert_eq!(origin.hits(), 0);
}

/// An approver program that logs each request line to `asked.jsonl` and answers by host:
/// allow `svc.test`, deny anything else.
const APPROVER_PY: &str = r#"
import json, sys
for line in sys.stdin:
    with open(sys.argv[1], "a") as f:
        f.write(line)
    req = json.loads(line)
    answer = "allow" if req["host"] == "svc.test" else "deny"
    print(json.dumps({"id": req["id"], "answer": answer}), flush=True)
"#;

#[test]
fn with_an_approver_program_the_models_requests_go_to_it() {
    let ws = TempDir::new("mcp-grant-program");
    let dir = TempDir::new("mcp-grant-approver");
    let data = TempDir::new("mcp-grant-program-data");
    let d = data.path().canonicalize().unwrap().display().to_string();
    std::fs::write(dir.join("approve.py"), APPROVER_PY).unwrap();
    let log = dir.join("asked.jsonl");
    let cmd = format!(
        "/usr/bin/python3 '{}' '{}'",
        dir.join("approve.py").display(),
        log.display()
    );
    let origin = Origin::serve("program page");
    let p = origin.port;
    let mut flags = grant_flags();
    flags.extend_from_slice(&["--approver", &cmd]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            // The client could be asked, but the program is the approver: nobody is elicited.
            {"elicit": ["accept", "accept"]},
            grant("other.test", p),
            grant("svc.test", p),
            curl("svc.test", p),
            {"asked": true},
            path_grant(&d, "read"),
        ]),
    );
    assert!(
        is_error(&r[5]) && text(&r[5]).contains("declined"),
        "the program allows by host, and a filesystem request has none: {:?}",
        r[5]
    );
    assert!(is_error(&r[1]), "{:?}", r[1]);
    assert!(text(&r[1]).contains("declined"), "{:?}", r[1]);
    assert!(!is_error(&r[2]), "{:?}", r[2]);
    assert!(text(&r[3]).contains("program page 200"), "{:?}", r[3]);
    assert!(
        asked(&r[4]).is_empty(),
        "the person was not asked: {:?}",
        r[4]
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hosts: Vec<&str> = lines.iter().map(|l| l["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["other.test", "svc.test", ""], "{lines:?}");
    assert_eq!(lines[2]["protocol"], "filesystem");
    assert_eq!(lines[2]["port"], 0);
    assert_eq!(lines[2]["grant"], format!("read:{d}"));
    assert_eq!(lines[1]["protocol"], "mcp-tool");
    assert_eq!(lines[1]["reason"], "requested-by-model");
    assert_eq!(lines[1]["grant"], format!("svc.test:{p}"));
    assert!(lines[1]["message"]
        .as_str()
        .unwrap()
        .contains("fetch the test page"));
    assert_eq!(origin.hits(), 1);
    // The program ended with the session: nothing of it is left.
    let marker = dir.join("approve.py").display().to_string();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !pids_with_marker(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "the approver program outlived the session: {:?}",
            pids_with_marker(&marker)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn path_grant(path: &str, access: &str) -> Value {
    json!({"call": "request_filesystem_grant", "args": {"path": path, "access": access, "reason": "read the notes"}})
}

/// The model asks for a host directory its box does not have: a yes adds it to the session's
/// policy for the next box (the running one ends: its interpreter state is gone), read-only as
/// asked; a no, or a request for the box's own directories or for the audit log's, changes
/// nothing. The host's files are untouched.
#[test]
fn a_filesystem_grant_the_person_accepts_applies_from_the_next_box() {
    let ws = TempDir::new("mcp-fsgrant-ws");
    let data = TempDir::new("mcp-fsgrant-data");
    std::fs::write(data.join("notes.txt"), "host notes\n").unwrap();
    let logs = TempDir::new("mcp-fsgrant-audit");
    let audit = logs.join("audit.jsonl").display().to_string();
    let d = data.path().canonicalize().unwrap().display().to_string();
    let logs_dir = logs.path().canonicalize().unwrap().display().to_string();
    let notes = format!("{d}/notes.txt");
    let mut flags = grant_flags();
    flags.extend_from_slice(&["--audit", &audit]);
    let r = mcp(
        ws.path(),
        &flags,
        json!([
            {"elicit": ["accept", "decline"]},
            {"list": true},
            {"call": "run_code", "args": {"code": "x = 41"}},
            {"call": "run_command", "args": {"command": format!("cat {notes}")}},
            path_grant(&d, "read"),
            {"call": "run_command", "args": {"command": format!("cat {notes}; echo changed > {notes}")}},
            {"call": "run_code", "args": {"code": "x"}},
            path_grant(&d, "write"),
            path_grant("/etc", "read"),
            path_grant(&logs_dir, "write"),
            {"call": "read_file", "args": {"path": notes}},
            {"call": "sandbox_info", "args": {}},
            path_grant(&d, "read"),
            {"asked": true},
        ]),
    );
    assert!(names(&r[1]).contains(&"request_filesystem_grant".to_string()));
    assert!(
        is_error(&r[3]) && text(&r[3]).contains("No such file"),
        "not granted yet: {:?}",
        r[3]
    );
    assert!(!is_error(&r[4]), "{:?}", r[4]);
    assert!(
        text(&r[4]).contains(&format!("Granted read:{d}")) && text(&r[4]).contains("restarts"),
        "{:?}",
        r[4]
    );
    let after = text(&r[5]);
    assert!(after.contains("host notes"), "{after}");
    assert!(
        after.contains("Read-only file system") || after.contains("Permission denied"),
        "read access only: {after}"
    );
    assert!(
        is_error(&r[6]) && text(&r[6]).contains("NameError"),
        "the box restarted for the grant, as the answer said: {:?}",
        r[6]
    );
    assert!(
        is_error(&r[7]) && text(&r[7]).contains("the user declined"),
        "{:?}",
        r[7]
    );
    assert!(
        is_error(&r[8]) && text(&r[8]).contains("under /etc"),
        "{:?}",
        r[8]
    );
    assert!(
        is_error(&r[9]) && text(&r[9]).contains("must never change"),
        "{:?}",
        r[9]
    );
    assert_eq!(text(&r[10]).trim(), "host notes", "{:?}", r[10]);
    assert!(
        text(&r[11]).contains(&format!(
            "Granted in this session (a person said yes): read:{d}"
        )),
        "{:?}",
        r[11]
    );
    assert!(text(&r[12]).contains("already granted"), "{:?}", r[12]);
    let asked = asked(&r[13]);
    assert_eq!(
        asked.len(),
        2,
        "only the two real requests were asked: {asked:?}"
    );
    assert!(asked[0].contains(&format!("read {d}")) && asked[0].contains("read the notes"));
    assert!(asked[1].contains("change or delete"), "{asked:?}");
    assert_eq!(
        std::fs::read_to_string(data.join("notes.txt")).unwrap(),
        "host notes\n",
        "the host file is untouched"
    );
    let answers: Vec<(String, String)> = audit_lines(&audit)
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            (s("subject"), s("answer"))
        })
        .collect();
    assert_eq!(
        answers,
        [
            (format!("read:{d}"), "allowed".into()),
            (format!("write:{d}"), "denied".into())
        ]
    );
}

/// `airlock wrap --approval untrusted`: every tool call of the wrapped server (the reference
/// filesystem server, in a box) is asked about through MCP elicitation first. An accepted call
/// runs; a declined one, and every call from a client that cannot be asked, never reaches the
/// server: the files they would write do not exist.
#[test]
fn wrap_untrusted_asks_before_each_tool_call_and_a_declined_one_never_runs() {
    let base = TempDir::new("wrap-untrusted");
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let audit = base.join("audit.jsonl").display().to_string();
    let (npm, server) = (
        npm_dir().display().to_string(),
        filesystem_server().display().to_string(),
    );
    // Held connections go to this program (it refuses all); the person answers the calls.
    let script = base.join("deny_all.py");
    std::fs::write(
        &script,
        "import json, sys\nfor l in sys.stdin:\n    print(json.dumps({'id': json.loads(l)['id'], 'answer': 'deny'}), flush=True)\n",
    )
    .unwrap();
    let deny_all = format!("/usr/bin/python3 '{}'", script.display());
    let flags = [
        "--read",
        npm.as_str(),
        "--net",
        "proxy",
        "--approval",
        "untrusted",
        "--approver",
        deny_all.as_str(),
        "--audit",
        audit.as_str(),
    ];
    let file = |name: &str| ws.join(name).display().to_string();
    let wrap = |steps: Value| {
        let mut args = vec!["wrap"];
        args.extend_from_slice(&flags);
        args.extend_from_slice(&["--", "node", &server, "/"]);
        run_client(&ws, &steps, &stdio(&airlock_bin(), &args))
    };
    let r = wrap(json!([
        {"elicit": ["accept", "decline"]},
        {"call": "write_file", "args": {"path": file("accepted.txt"), "content": "yes"}},
        {"call": "write_file", "args": {"path": file("declined.txt"), "content": "no"}},
        {"list": true},
        {"asked": true},
    ]));
    assert!(!is_error(&r[1]), "{:?}", r[1]);
    assert_eq!(
        std::fs::read_to_string(ws.join("accepted.txt")).unwrap(),
        "yes"
    );
    assert!(is_error(&r[2]), "{:?}", r[2]);
    assert!(text(&r[2]).contains("the user declined"), "{:?}", r[2]);
    assert!(!ws.join("declined.txt").exists(), "the declined call ran");
    assert!(
        names(&r[3]).contains(&"write_file".to_string()),
        "listing is not asked about"
    );
    let asked = asked(&r[4]);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[0].contains("tool write_file") && asked[0].contains("accepted.txt"),
        "the question shows the tool and its arguments: {asked:?}"
    );
    // A client that declared no elicitation: nothing runs.
    let r = wrap(json!([
        {"call": "write_file", "args": {"path": file("unasked.txt"), "content": "no"}},
    ]));
    assert!(is_error(&r[0]), "{:?}", r[0]);
    assert!(
        text(&r[0]).contains("did not declare elicitation"),
        "{:?}",
        r[0]
    );
    assert!(!ws.join("unasked.txt").exists(), "the unasked call ran");
    let answers: Vec<(String, String)> = audit_lines(&audit)
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            (s("tool"), s("answer"))
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("write_file".into(), "allowed".into()),
            ("write_file".into(), "denied".into()),
            ("write_file".into(), "cannot-ask".into()),
        ]
    );
    let calls: Vec<String> = audit_lines(&audit)
        .iter()
        .filter(|l| l["kind"] == "tool_call")
        .map(|l| l["status"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(calls, ["ok"], "only the accepted call reached the server");
}
