//! Structured denials (issue 21, step 6) in the result document of a real `airlock run`: each
//! refusal is a `{kind, what, reason, rule, grant, flag}` value, both on the network event
//! that records it and in the document's `denials`, next to the fields that were there
//! before (kept as they were). The box's curl goes through its real proxy to an origin this
//! test runs on 127.0.0.1 (`*.test` names mapped with `--map-host`: no DNS, nothing leaves
//! the machine).

mod approvals_support;
mod common;

use approvals_support::Origin;
use common::{airlock, TempDir};
use serde_json::{json, Value};

/// `airlock run --result FILE <flags> -- sh -c <script>`: the exit code and the document.
fn run(flags: &[&str], script: &str) -> (i32, Value, String) {
    let ws = TempDir::new("denials-ws");
    let out = TempDir::new("denials-result");
    let file = out.join("result.json");
    let file_s = file.to_string_lossy().into_owned();
    let mut args = vec!["run", "--result", file_s.as_str()];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let r = airlock(ws.path(), &args);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", r.stderr));
    let doc = serde_json::from_str(&text).expect("the result is JSON");
    (r.code, doc, r.stdout)
}

#[test]
fn refused_connections_carry_the_grant_that_would_allow_them() {
    if common::test_backend_kind() == airlock_policy::BackendKind::Wasm {
        // A wasm box has no network: `--net proxy` is refused before it starts (approvals.rs
        // checks that), so there is no refusal to describe.
        return;
    }
    let origin = Origin::serve();
    let p = origin.port;
    let script = format!(
        "curl -s -o /dev/null -w '%{{http_code}}\\n' http://svc.test:{p}/; \
         curl -s -o /dev/null -w '%{{http_code}}\\n' http://bad.test:{p}/"
    );
    let (code, doc, stdout) = run(
        &[
            "--net",
            "proxy",
            "--map-host",
            "svc.test=127.0.0.1",
            "--map-host",
            "bad.test=127.0.0.1",
            "--allow-ip",
            "127.0.0.1",
            "--deny-domain",
            "bad.test",
        ],
        &script,
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["403", "403"],
        "{stdout}"
    );
    assert_eq!(origin.connections(), 0);
    let denials = doc["denials"].as_array().expect("denials");
    let svc = json!({
        "kind": "network",
        "what": format!("svc.test:{p}"),
        "reason": "not-allowed",
        "rule": null,
        "grant": format!("svc.test:{p}"),
        "flag": format!("--allow-domain svc.test:{p}"),
    });
    assert!(denials.contains(&svc), "{denials:#?}");
    // A deny rule wins: nothing may allow it, so no grant is offered.
    let bad = denials
        .iter()
        .find(|d| d["what"] == format!("bad.test:{p}"))
        .unwrap_or_else(|| panic!("{denials:#?}"));
    assert_eq!(bad["reason"], "denied-domain");
    assert_eq!(bad["rule"], "--deny-domain bad.test");
    assert_eq!((&bad["grant"], &bad["flag"]), (&Value::Null, &Value::Null));
    // The network events keep their fields and carry the same value.
    let event = doc["network_events"]
        .as_array()
        .expect("network_events")
        .iter()
        .find(|e| e["host"] == "svc.test" && e["decision"] == "deny")
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(event["reason"], "not-allowed");
    assert!(event["message"]
        .as_str()
        .is_some_and(|m| m.contains("--allow-domain svc.test")));
    assert_eq!(event["denial"], svc);
}

#[test]
fn a_limit_reached_names_the_flag_that_raises_it() {
    let (code, doc, _) = run(&["--timeout", "1s"], "sleep 30");
    assert_eq!(code, 124, "{doc}");
    assert_eq!(doc["limits_hit"], json!(["timeout"]), "kept as it was");
    assert_eq!(
        doc["denials"],
        json!([{
            "kind": "limit",
            "what": "timeout",
            "reason": "timeout-reached",
            "rule": null,
            "grant": null,
            "flag": "--timeout",
        }])
    );
}
