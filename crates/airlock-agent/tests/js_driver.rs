#![allow(clippy::unwrap_used)]
//! The JavaScript code-interpreter driver (`drivers/js_driver.js`) run under `/usr/bin/node`:
//! state across executions, results, streamed output and its cap, tracebacks that point at
//! the user's cell, syntax errors, SIGINT, per-execution env and top-level await.

mod driver_support;

use driver_support::{
    assert_output_is_capped_per_execution, end_status, of_type, result_plain, Driver,
};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

fn start() -> Driver {
    Driver::start("/usr/bin/node", "js_driver.js")
}

fn traceback_text(error: &Value) -> String {
    error["traceback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn state_persists_and_undefined_gives_no_result() {
    let mut d = start();
    let first = d.run("let x = 41");
    assert_eq!(end_status(&first), "ok");
    assert!(
        of_type(&first, "result").is_empty(),
        "declaration: {first:?}"
    );
    assert_eq!(first.last().unwrap()["execution_count"], 1);

    assert_eq!(result_plain(&d.run("x + 1")).as_deref(), Some("42"));

    assert_eq!(
        end_status(&d.run("function f(v) {\n  return v * 2;\n}")),
        "ok"
    );
    let called = d.run("f(x)");
    assert_eq!(result_plain(&called).as_deref(), Some("82"));
    assert_eq!(called.last().unwrap()["execution_count"], 4);

    let undefined = d.run("undefined");
    assert!(
        of_type(&undefined, "result").is_empty(),
        "undefined: {undefined:?}"
    );
    assert_eq!(end_status(&undefined), "ok");

    let text = d.run("'a' + 'b'");
    assert_eq!(result_plain(&text).as_deref(), Some("'ab'"));
}

#[test]
fn stdout_and_stderr_keep_their_order() {
    let mut d = start();
    let events = d.run(
        "console.log(\"a\"); console.error(\"b\"); process.stdout.write(\"c\\n\"); \
         process.stderr.write(\"d\\n\"); console.log(\"e\", 1)",
    );
    let output: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "stdout" || e["type"] == "stderr")
        .map(|e| {
            assert!(e["time"].is_number());
            (
                e["type"].as_str().unwrap().to_owned(),
                e["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("stdout", "a\n"),
        ("stderr", "b\n"),
        ("stdout", "c\n"),
        ("stderr", "d\n"),
        ("stdout", "e 1\n"),
    ]
    .map(|(k, t)| (k.to_owned(), t.to_owned()));
    assert_eq!(output, expected);
    assert_eq!(end_status(&events), "ok");
    assert!(of_type(&events, "result").is_empty(), "{events:?}");
}

#[test]
fn traceback_points_at_the_users_cell_line() {
    let mut d = start();
    let events = d.run("let a = 1;\nlet b = 2;\nthrow new TypeError(\"boom\");\n");
    assert_eq!(end_status(&events), "error");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["name"], "TypeError");
    assert_eq!(error["value"], "boom");
    let traceback = traceback_text(error);
    assert!(traceback.contains("<cell-1>:3"), "{traceback}");
    assert!(!traceback.contains("js_driver"), "{traceback}");
    assert!(!traceback.contains("node:vm"), "{traceback}");
    // The context survives the error.
    assert_eq!(result_plain(&d.run("a + b")).as_deref(), Some("3"));
}

#[test]
fn syntax_error_is_an_error_event() {
    let mut d = start();
    let events = d.run("let x = 1;\nlet y = );\n");
    assert_eq!(end_status(&events), "error");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["name"], "SyntaxError");
    let traceback = traceback_text(error);
    assert!(traceback.contains("<cell-1>:2"), "{traceback}");
    assert!(!traceback.contains("js_driver"), "{traceback}");
    // Nothing of the failed cell ran; the context still works.
    let after = d.run("typeof x");
    assert_eq!(result_plain(&after).as_deref(), Some("'undefined'"));
}

#[test]
fn sigint_interrupts_and_keeps_state() {
    let mut d = start();
    assert_eq!(end_status(&d.run("let x = 7")), "ok");
    // While idle, SIGINT is ignored.
    d.interrupt();
    std::thread::sleep(Duration::from_millis(100));
    let id = d.send("while (true) {}", None);
    std::thread::sleep(Duration::from_millis(300));
    d.interrupt();
    let events = d.collect(&id);
    assert_eq!(end_status(&events), "interrupted", "{events:?}");
    assert_eq!(of_type(&events, "error")[0]["name"], "KeyboardInterrupt");
    assert_eq!(result_plain(&d.run("x")).as_deref(), Some("7"));
}

#[test]
fn env_applies_to_one_execution_only() {
    let mut d = start();
    let id = d.send("process.env.AIRLOCK_K", Some(json!({"AIRLOCK_K": "V"})));
    let events = d.collect(&id);
    assert_eq!(result_plain(&events).as_deref(), Some("'V'"));
    let after = d.run("'AIRLOCK_K' in process.env");
    assert_eq!(result_plain(&after).as_deref(), Some("false"));
}

#[test]
fn huge_output_is_capped_not_fatal() {
    let mut d = start();
    assert_output_is_capped_per_execution(
        &mut d,
        "console.log(\"x\".repeat(10000000));\nconsole.log(\"after\");",
        "console.log('fresh')",
    );
}

#[test]
fn top_level_await_runs_to_completion() {
    let mut d = start();
    let events = d.run(
        "await new Promise(r => setTimeout(r, 10));\nconsole.log('waited');\n\
         globalThis.kept = 5;\n5",
    );
    assert_eq!(end_status(&events), "ok", "{events:?}");
    assert_eq!(of_type(&events, "stdout")[0]["text"], "waited\n");
    assert_eq!(result_plain(&d.run("kept")).as_deref(), Some("5"));
    // A rejected await is an error with the user's line.
    let failed = d.run("await null;\nawait Promise.reject(new Error('nope'));");
    assert_eq!(end_status(&failed), "error", "{failed:?}");
    let error = of_type(&failed, "error")[0];
    assert_eq!(error["value"], "nope");
    assert!(traceback_text(error).contains("<cell-3>:2"), "{error}");
}

#[test]
fn bad_requests_get_a_protocol_error() {
    let mut d = start();
    writeln!(d.stdin, "{{\"id\": \"bad\", \"code\": 5}}").unwrap();
    d.stdin.flush().unwrap();
    let events = d.collect("bad");
    assert_eq!(end_status(&events), "error");
    assert_eq!(of_type(&events, "error")[0]["name"], "ProtocolError");
    assert_eq!(result_plain(&d.run("1 + 1")).as_deref(), Some("2"));
}

#[test]
fn an_awaiting_cell_gives_its_value_and_keeps_its_declarations() {
    let mut d = start();
    let events =
        d.run("const v = await Promise.resolve(4)\nfunction twice(n) { return 2 * n }\ntwice(v)");
    assert_eq!(result_plain(&events).as_deref(), Some("8"), "{events:?}");
    assert_eq!(result_plain(&d.run("twice(v) + 1")).as_deref(), Some("9"));
    // A cell ending in a declaration has no value, as a script's.
    assert_eq!(
        result_plain(&d.run("const w = await Promise.resolve(1)")),
        None
    );
    let events = d.run("import { sep } from 'node:path'\nimport * as os from 'os'\n[sep, typeof os.cpus].join(' ')");
    assert_eq!(
        result_plain(&events).as_deref(),
        Some("'/ function'"),
        "{events:?}"
    );
    assert_eq!(result_plain(&d.run("sep")).as_deref(), Some("'/'"));
}
