//! The OpenAPI document against the real server: schemathesis (pinned, installed by
//! `scripts/test.sh` under `target/schemathesis`) generates requests from `/openapi.json` — valid
//! ones and ones that break it — and sends them to a real `airlock serve` on 127.0.0.1 with the
//! API key. Every answer must conform to the document (status, content type, body schema), no
//! request may get a 5xx, every schema-valid request must be accepted and every schema-violating
//! one refused. The sandboxes the run creates die with the server, which is stopped by its PID;
//! no box process or cgroup may be left behind.
#![allow(clippy::unwrap_used)]

mod common;

use common::{leftover_cgroups, pids_with_marker, ServeProcess, TempDir};
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

fn children(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
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
    let mut serve = ServeProcess::start(data.path(), &[]);
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
        for pid in children(serve.pid()) {
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
    for h in &hosts {
        let cg = format!("airlock-{h}-");
        assert!(
            leftover_cgroups()
                .iter()
                .all(|p| !p.to_string_lossy().contains(&cg)),
            "cgroup {cg} left behind"
        );
    }

    assert!(status.success(), "schemathesis found mismatches:\n{report}");
    // A run that tested nothing would pass too: it must have reached every operation.
    assert!(
        report.contains("15 selected / 15 total") && report.contains("Tested: 15"),
        "schemathesis did not test every operation:\n{report}"
    );
    assert!(
        hosts.len() > 1,
        "the run created no sandbox, so it never reached the routes of one:\n{report}"
    );
}
