//! The OpenAPI document against the real server: schemathesis (pinned, installed by
//! `scripts/test.sh` under `target/schemathesis`) generates requests from `/openapi.json` — valid
//! ones and ones that break it — and sends them to a real `airlock serve` on 127.0.0.1 with the
//! API key. Every answer must conform to the document (status, content type, body schema), no
//! request may get a 5xx, every schema-valid request must be accepted and every schema-violating
//! one refused. The sandboxes the run creates die with the server, which is stopped by its PID;
//! no box process or cgroup may be left behind.
#![allow(clippy::unwrap_used)]

mod common;

use common::{alive, descendants, leftover_cgroups, pids_with_marker, ServeProcess, TempDir};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The pin `scripts/test.sh` installs.
const PIN: &str = "schemathesis==4.32.5";
/// The checks run on every answer.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_schema_conformance,negative_data_rejection,positive_data_acceptance";
/// Generated requests per operation and phase: enough to reach every bound, small enough for two
/// shared cores.
const EXAMPLES_PER_OPERATION: &str = "25";
/// The whole run, at most; past it the run is killed and the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(150);

/// The `st` executable: `$AIRLOCK_SCHEMATHESIS`, else the workspace's `target/schemathesis`.
fn schemathesis() -> PathBuf {
    let st = std::env::var_os("AIRLOCK_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/schemathesis/venv/bin/st")
        });
    assert!(
        st.is_file(),
        "schemathesis is missing at {}: run scripts/test.sh once (it installs {PIN} into \
         target/schemathesis/venv), or point AIRLOCK_SCHEMATHESIS at an `st` of that version",
        st.display()
    );
    st
}

#[test]
fn the_server_answers_as_its_openapi_document_says() {
    let st = schemathesis();
    let version = Command::new(&st).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).to_string();
    let want = PIN.trim_start_matches("schemathesis==");
    assert!(
        version.contains(want),
        "{} is {version:?}, not {PIN}: rerun scripts/test.sh to reinstall the pin",
        st.display()
    );

    let data = TempDir::new("openapi-st");
    let work = TempDir::new("openapi-st-work");
    // The run creates over 100 sandboxes that mostly idle: with the default 16 slots, a
    // resume it sends waits for a slot (up to the queue's 120 s), past schemathesis's request
    // timeout, and which request meets that depends on the generated sequence.
    // Cgroups made before this test (a dead process of an earlier run that had one of our hosts'
    // PIDs) are not this server's: only ones made since count.
    let began = std::time::SystemTime::now() - Duration::from_secs(1);
    let mut serve = ServeProcess::start(data.path(), &["--max-running", "256"]);
    let key = serve
        .printed_key
        .clone()
        .expect("the first start prints the API key");
    let mut run = Command::new(&st)
        .current_dir(work.path())
        .args(["run", &format!("{}/openapi.json", serve.base)])
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--checks", CHECKS])
        .args(["--max-examples", EXAMPLES_PER_OPERATION])
        .args(["--seed", "20240611"])
        .args(["--generation-database", "none"])
        .args(["--workers", "1", "--request-timeout", "60"])
        .args(["--no-color", "--output-truncate", "false"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Box hosts seen while the run goes on (a box may also end before the server stops).
    let mut hosts = Vec::new();
    let status = loop {
        for pid in descendants(&[serve.pid()]) {
            if !hosts.contains(&pid) {
                hosts.push(pid);
            }
        }
        if let Some(status) = run.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_LIMIT {
            // Our own child, by its PID.
            let _ = run.kill();
            let _ = run.wait();
            panic!("schemathesis ran past {RUN_LIMIT:?}; it was killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = run.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    serve.stop();
    let deadline = Instant::now() + Duration::from_secs(20);
    while hosts.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<i32> = hosts.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "box processes left behind: {left:?}");
    let marker = data.path().to_string_lossy().to_string();
    assert_eq!(
        pids_with_marker(&marker),
        Vec::<i32>::new(),
        "processes of this server's data dir left behind"
    );
    // Each host's sentinel removes its cgroups once the host is gone: give it the time its own
    // teardown may take (it waits up to 3 s for members to exit), then nothing may be left.
    let ours = |p: &std::path::PathBuf| {
        let made_since = std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= began);
        let name = p.to_string_lossy();
        made_since
            && hosts
                .iter()
                .any(|h| name.contains(&format!("airlock-{h}-")))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while leftover_cgroups().iter().any(ours) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<_> = leftover_cgroups().into_iter().filter(|p| ours(p)).collect();
    assert!(
        left.is_empty(),
        "cgroups of this server's boxes left behind: {left:?}"
    );

    assert!(status.success(), "schemathesis found mismatches:\n{report}");
    // A run that tested nothing would pass too: it must have reached every operation.
    assert!(
        report.contains("Selected: 23/23") && report.contains("Tested: 23"),
        "schemathesis did not test every operation:\n{report}"
    );
    assert!(
        hosts.len() > 1,
        "the run created no sandbox, so it never reached the routes of one:\n{report}"
    );
}

/// Sends `body` (None: no body) with the key; returns the status and the JSON answer.
fn call(
    serve: &ServeProcess,
    key: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, serde_json::Value) {
    let req = ureq::request(method, &format!("{}{path}", serve.base))
        .set("Authorization", &format!("Bearer {key}"));
    let res = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}

/// What the review's schemathesis run found, replayed one by one: each bad input is a 400
/// whose message names the field, and each input the document allows is taken.
#[test]
fn bad_input_is_a_400_naming_the_field_and_documented_input_is_taken() {
    let data = TempDir::new("openapi-findings");
    let mut serve = ServeProcess::start(data.path(), &[]);
    let key = serve.printed_key.clone().unwrap();
    let (status, created) = call(
        &serve,
        &key,
        "POST",
        "/v1/sandboxes",
        Some(r#"{"timeout": 300.0}"#),
    );
    assert_eq!(
        status, 201,
        "a whole number is an integer, as JSON Schema says: {created}"
    );
    let id = created["id"].as_str().unwrap().to_string();
    let sb = format!("/v1/sandboxes/{id}");
    let refused = [
        (
            "POST",
            format!("{sb}/contexts"),
            Some(r#"{"cwd": "tmp"}"#),
            "cwd",
        ),
        (
            "POST",
            format!("{sb}/contexts"),
            Some(r#"{"cwd": ""}"#),
            "cwd",
        ),
        (
            "POST",
            format!("{sb}/contexts"),
            Some("[null, null]"),
            "JSON object",
        ),
        (
            "POST",
            format!("{sb}/exec"),
            Some(r#"{"cmd": [""]}"#),
            "cmd",
        ),
        (
            "POST",
            format!("{sb}/exec"),
            Some(r#"{"cmd": ["true"], "cwd": "rel"}"#),
            "cwd",
        ),
        (
            "POST",
            format!("{sb}/exec"),
            Some(r#"{"cmd": ["true"], "timeout": -1}"#),
            "timeout",
        ),
        (
            "POST",
            format!("{sb}/code"),
            Some(r#"{"code": "1", "timeout": 0}"#),
            "timeout",
        ),
        (
            "POST",
            format!("{sb}/timeout"),
            Some(r#"{"timeout": 0}"#),
            "timeout",
        ),
        ("GET", format!("{sb}/events?after=-1"), None, "?after="),
        ("GET", format!("{sb}/files?path="), None, "?path="),
        (
            "GET",
            format!("{sb}/files/list?path=/&depth=0"),
            None,
            "?depth=",
        ),
        (
            "GET",
            "/v1/sandboxes?state=sleeping".to_string(),
            None,
            "?state=",
        ),
        (
            "GET",
            "/v1/sandboxes?state=running,".to_string(),
            None,
            "?state=",
        ),
        (
            "POST",
            "/v1/sandboxes".to_string(),
            Some(r#"{"policy": {"network": {"mode": "proxy", "allow_ip": ["10.0.0.1/8"]}}}"#),
            "policy.network",
        ),
        (
            "POST",
            "/v1/sandboxes".to_string(),
            Some(r#"{"policy": {"limits": {"cpus": 1e-300}}}"#),
            "cpus",
        ),
    ];
    for (method, path, body, field) in refused {
        let (status, v) = call(&serve, &key, method, &path, body);
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (400, Some("invalid")),
            "{method} {path} {body:?}: {v}"
        );
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(field),
            "{method} {path}: {message} should name {field}"
        );
    }
    // The box itself refusing a well-formed request is a conflict with its contents, not a 400.
    let (status, v) = call(&serve, &key, "GET", &format!("{sb}/files?path=/"), None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{v}"
    );
    // A context in a directory that does not exist: 404 naming the cwd, and the box still works.
    let (status, v) = call(
        &serve,
        &key,
        "POST",
        &format!("{sb}/contexts"),
        Some(r#"{"cwd": "/nope"}"#),
    );
    assert_eq!(status, 404, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("cwd"),
        "{v}"
    );
    let (status, v) = call(
        &serve,
        &key,
        "POST",
        &format!("{sb}/contexts"),
        Some(r#"{"cwd": "/tmp"}"#),
    );
    assert_eq!(status, 201, "{v}");
    let (status, v) = call(
        &serve,
        &key,
        "GET",
        "/v1/sandboxes?metadata%5Bteam%5D=x",
        None,
    );
    assert_eq!((status, v), (200, serde_json::json!([])));
    let hosts = descendants(&[serve.pid()]);
    serve.stop();
    let deadline = Instant::now() + Duration::from_secs(20);
    while hosts.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        hosts.iter().all(|p| !alive(*p)),
        "box processes left behind"
    );
}
