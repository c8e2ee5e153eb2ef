#![allow(clippy::unwrap_used)]
//! The Bash code-interpreter driver (`drivers/bash_driver.py`) run under `/usr/bin/python3`:
//! state across executions (cwd, variables, functions), streamed output and its cap, exit
//! status, SIGINT, per-execution env and recovery after the shell exits.

mod driver_support;

use driver_support::{assert_output_is_capped_per_execution, end_status, of_type, text, Driver};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn start() -> Driver {
    Driver::start("/usr/bin/python3", "bash_driver.py")
}

/// All text of `kind` ("stdout"/"stderr") events, concatenated.
fn exit_code(events: &[Value]) -> Option<i64> {
    events.last().unwrap()["exit_code"].as_i64()
}

#[test]
fn cwd_persists_across_executions() {
    let mut d = start();
    assert_eq!(end_status(&d.run("cd /tmp")), "ok");
    assert_eq!(text(&d.run("pwd"), "stdout"), "/tmp\n");
}

#[test]
fn variables_and_functions_persist() {
    let mut d = start();
    let events = d.run("export AIRLOCK_E=exported\nplain=shell\ngreet() { echo \"hi $1\"; }");
    assert_eq!(end_status(&events), "ok");
    let events = d.run("echo \"$plain\"; sh -c 'echo \"$AIRLOCK_E\"'; greet you");
    assert_eq!(text(&events, "stdout"), "shell\nexported\nhi you\n");
    assert_eq!(end_status(&events), "ok");
    assert_eq!(exit_code(&events), Some(0));
}

#[test]
fn stdout_and_stderr_keep_their_order() {
    let mut d = start();
    // Two pipes: order across streams is exact once writes are not back to back.
    let events = d.run("echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c");
    let output: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "stdout" || e["type"] == "stderr")
        .map(|e| {
            assert!(e["time"].is_f64());
            (
                e["type"].as_str().unwrap().to_owned(),
                e["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]
        .map(|(k, t)| (k.to_owned(), t.to_owned()));
    assert_eq!(output, expected);
    assert_eq!(end_status(&events), "ok");
    // Back to back, each stream is still complete and in its own order.
    let events = d.run("echo a; echo b >&2; echo c");
    assert_eq!(text(&events, "stdout"), "a\nc\n");
    assert_eq!(text(&events, "stderr"), "b\n");
}

#[test]
fn failing_last_command_is_an_error_with_its_exit_code() {
    let mut d = start();
    let events = d.run("false");
    assert_eq!(end_status(&events), "error");
    assert_eq!(exit_code(&events), Some(1));
    assert!(of_type(&events, "error").is_empty());
    let events = d.run("false; true");
    assert_eq!(end_status(&events), "ok");
}

#[test]
fn env_applies_to_one_execution_only() {
    let mut d = start();
    d.run("export AIRLOCK_KEEP=before");
    let id = d.send(
        "echo \"$AIRLOCK_K $AIRLOCK_KEEP\"; sh -c 'echo \"$AIRLOCK_K\"'",
        Some(json!({"AIRLOCK_K": "V 'q'", "AIRLOCK_KEEP": "during"})),
    );
    let events = d.collect(&id);
    assert_eq!(text(&events, "stdout"), "V 'q' during\nV 'q'\n");
    let after = d.run("echo \"${AIRLOCK_K-unset} $AIRLOCK_KEEP\"");
    assert_eq!(text(&after, "stdout"), "unset before\n");
}

#[test]
fn sigint_interrupts_and_keeps_state() {
    let mut d = start();
    assert_eq!(end_status(&d.run("X=7; cd /tmp")), "ok");
    // While idle, SIGINT is ignored.
    d.interrupt();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let id = d.send("sleep 30; echo not-reached", None);
    std::thread::sleep(Duration::from_millis(300));
    d.interrupt();
    let events = d.collect(&id);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(end_status(&events), "interrupted");
    assert!(!text(&events, "stdout").contains("not-reached"));
    assert_eq!(text(&d.run("echo $X; pwd"), "stdout"), "7\n/tmp\n");
    // A pure-shell busy loop is interrupted too.
    let id = d.send("while :; do :; done", None);
    std::thread::sleep(Duration::from_millis(300));
    d.interrupt();
    assert_eq!(end_status(&d.collect(&id)), "interrupted");
    assert_eq!(text(&d.run("echo $X"), "stdout"), "7\n");
}

#[test]
fn marker_like_output_does_not_end_the_execution() {
    let mut d = start();
    let events = d.run(
        "for i in 1 2 3; do echo \"deadbeefdeadbeefdeadbeefdeadbeef $i\"; echo \"$i 0\"; done\n\
         echo 0 >&2; sleep 0.2; echo done",
    );
    assert_eq!(end_status(&events), "ok");
    assert!(text(&events, "stdout").ends_with("3 0\ndone\n"));
}

#[test]
fn huge_output_is_capped_not_fatal() {
    let mut d = start();
    let stdout =
        assert_output_is_capped_per_execution(&mut d, "yes | head -c 5000000", "echo fresh");
    assert!(stdout.len() >= 1024 * 1024 - 4, "{} bytes", stdout.len());
}

#[test]
fn exit_reports_shell_exited_and_a_fresh_shell_follows() {
    let mut d = start();
    d.run("LOST=yes; cd /tmp");
    let events = d.run("echo bye; exit 3");
    assert_eq!(text(&events, "stdout"), "bye\n");
    assert_eq!(end_status(&events), "error");
    assert_eq!(exit_code(&events), Some(3));
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["name"], "ShellExited");
    let next = d.run("echo \"[${LOST-}]\"");
    assert_eq!(text(&next, "stdout"), "[]\n");
    assert_eq!(end_status(&next), "ok");
    assert_eq!(next.last().unwrap()["execution_count"], 3);
}
