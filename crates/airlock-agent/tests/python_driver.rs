#![allow(clippy::unwrap_used)]
//! The Python code-interpreter driver (`drivers/python_driver.py`) run under `/usr/bin/python3`:
//! state across executions, results and rich formats, streamed output and its cap, tracebacks
//! that point at the user's cell, matplotlib and pandas output, SIGINT and per-execution env.

mod driver_support;

use driver_support::{
    assert_output_is_capped_per_execution, end_status, of_type, result_plain, Driver,
};
use serde_json::json;
use std::time::Duration;

fn start() -> Driver {
    Driver::start("/usr/bin/python3", "python_driver.py")
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in text.as_bytes().iter().filter(|&&c| c != b'=') {
        acc = (acc << 6) | value(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).unwrap());
        }
    }
    out
}

#[test]
fn state_persists_and_only_non_none_expressions_give_results() {
    let mut d = start();
    let first = d.run("x = 41");
    assert_eq!(end_status(&first), "ok");
    assert!(of_type(&first, "result").is_empty(), "statement: {first:?}");
    assert_eq!(first.last().unwrap()["execution_count"], 1);

    let second = d.run("def f(v):\n    return v + 1\nf(x)");
    assert_eq!(result_plain(&second).as_deref(), Some("42"));
    assert_eq!(second.last().unwrap()["execution_count"], 2);

    let none = d.run("None");
    assert!(of_type(&none, "result").is_empty(), "None: {none:?}");
    assert_eq!(end_status(&none), "ok");
}

#[test]
fn stdout_and_stderr_keep_their_order() {
    let mut d = start();
    let events = d.run("print(\"a\"); import sys; print(\"b\", file=sys.stderr); print(\"c\")");
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
}

#[test]
fn traceback_points_at_the_users_cell_line() {
    let mut d = start();
    let events = d.run("a = 1\nb = 2\nraise ValueError(\"boom\")\n");
    assert_eq!(end_status(&events), "error");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["name"], "ValueError");
    assert_eq!(error["value"], "boom");
    let traceback = error["traceback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(traceback.contains("<cell-1>"), "{traceback}");
    assert!(traceback.contains("line 3"), "{traceback}");
    assert!(!traceback.contains("python_driver"), "{traceback}");
    // The context survives the error.
    assert_eq!(result_plain(&d.run("a + b")).as_deref(), Some("3"));
}

#[test]
fn syntax_error_reports_the_users_line() {
    let mut d = start();
    let events = d.run("x = 1\ny = (\n");
    assert_eq!(end_status(&events), "error");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["name"], "SyntaxError");
    let traceback = error["traceback"].to_string();
    assert!(traceback.contains("<cell-1>"), "{traceback}");
    assert!(traceback.contains("line 2"), "{traceback}");
    assert!(!traceback.contains("python_driver"), "{traceback}");
}

#[test]
fn display_and_rich_formats() {
    let mut d = start();
    let code = "class Rich:\n    def _repr_html_(self):\n        return '<b>hi</b>'\n    \
                def _repr_png_(self):\n        return b'\\x89PNG'\n    \
                def _repr_latex_(self):\n        return None\n    \
                def __repr__(self):\n        return 'Rich()'\n\
                display(Rich())\nRich()";
    let events = d.run(code);
    assert_eq!(end_status(&events), "ok");
    let display = of_type(&events, "display");
    assert_eq!(display.len(), 1, "{events:?}");
    let result = of_type(&events, "result");
    assert_eq!(result.len(), 1, "{events:?}");
    for data in [&display[0]["data"], &result[0]["data"]] {
        assert_eq!(data["text/plain"], "Rich()");
        assert_eq!(data["text/html"], "<b>hi</b>");
        assert_eq!(
            base64_decode(data["image/png"].as_str().unwrap()),
            b"\x89PNG"
        );
        assert!(data.get("text/latex").is_none(), "None is ignored: {data}");
    }
}

#[test]
fn matplotlib_figures_become_png_displays() {
    let mut d = start();
    let events = d.run(
        "import matplotlib.pyplot as plt\nplt.figure(figsize=(4,3), dpi=100)\nplt.plot([1,2,3])\nNone",
    );
    assert_eq!(end_status(&events), "ok", "{events:?}");
    let displays = of_type(&events, "display");
    assert_eq!(displays.len(), 1, "{events:?}");
    let png = base64_decode(displays[0]["data"]["image/png"].as_str().unwrap());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (400, 300));
    // Figures were closed: the next execution shows nothing.
    let next = d.run("len(plt.get_fignums())");
    assert!(of_type(&next, "display").is_empty(), "{next:?}");
    assert_eq!(result_plain(&next).as_deref(), Some("0"));
}

#[test]
fn pandas_dataframe_result_has_html_table() {
    let mut d = start();
    let events = d.run("import pandas as pd\npd.DataFrame({\"a\": [1, 2]})");
    assert_eq!(end_status(&events), "ok", "{events:?}");
    let data = &of_type(&events, "result")[0]["data"];
    assert!(data["text/html"].as_str().unwrap().contains("<table"));
    assert!(data["text/plain"].as_str().unwrap().contains('a'));
}

#[test]
fn sigint_interrupts_and_keeps_state() {
    let mut d = start();
    assert_eq!(end_status(&d.run("x = 7")), "ok");
    // While idle, SIGINT is ignored.
    d.interrupt();
    std::thread::sleep(Duration::from_millis(100));
    let id = d.send("while True:\n    pass", None);
    std::thread::sleep(Duration::from_millis(300));
    d.interrupt();
    let events = d.collect(&id);
    assert_eq!(end_status(&events), "interrupted");
    assert_eq!(of_type(&events, "error")[0]["name"], "KeyboardInterrupt");
    assert_eq!(result_plain(&d.run("x")).as_deref(), Some("7"));
}

#[test]
fn env_applies_to_one_execution_only() {
    let mut d = start();
    let id = d.send(
        "import os\nos.environ[\"AIRLOCK_K\"]",
        Some(json!({"AIRLOCK_K": "V"})),
    );
    let events = d.collect(&id);
    assert_eq!(result_plain(&events).as_deref(), Some("'V'"));
    let after = d.run("'AIRLOCK_K' in os.environ");
    assert_eq!(result_plain(&after).as_deref(), Some("False"));
}

#[test]
fn huge_output_is_capped_not_fatal() {
    let mut d = start();
    assert_output_is_capped_per_execution(
        &mut d,
        "print(\"x\" * 10_000_000)\nprint(\"after\")",
        "print('fresh')",
    );
}

#[test]
fn an_interrupted_shell_escape_leaves_no_process_behind() {
    let mut d = start();
    let dir = std::env::temp_dir().join(format!("airlock-shell-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("pid");
    // The command and a child it starts in the background both sleep; SIGINT must end both.
    let id = d.send(
        &format!("!sleep 300 & echo $! > {}; sleep 300", pidfile.display()),
        None,
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the shell never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    d.interrupt();
    let events = d.collect(&id);
    assert_eq!(end_status(&events), "interrupted", "{events:?}");
    // Up to 10 s: a SIGKILLed process ends when it is next scheduled, which a loaded machine
    // may take a while to get to.
    let gone = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        !alive
    });
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        gone,
        "the shell escape's background child {pid} outlived the interrupt"
    );
    assert_eq!(result_plain(&d.run("1 + 1")).as_deref(), Some("2"));
}

#[test]
fn cells_are_dedented_and_magics_run() {
    let mut d = start();
    let events = d.run("\n    v = 3\n    if v:\n        print('in')\n    v + 1\n");
    assert_eq!(result_plain(&events).as_deref(), Some("4"), "{events:?}");
    // Valid Python is never rewritten: `%` and `!` inside expressions and strings stay.
    let events = d.run("a = 7 % 4\nb = '!not a shell'\n(a, b)");
    assert_eq!(
        result_plain(&events).as_deref(),
        Some("(3, '!not a shell')")
    );
    let events = d.run("!echo {v * 2} $v");
    assert_eq!(driver_support::text(&events, "stdout"), "6 3\n");
    let events = d.run("%nosuch");
    assert_eq!(of_type(&events, "error")[0]["name"], "UsageError");
    // A background job left holding the output pipe does not hold the cell.
    let started = std::time::Instant::now();
    let events = d.run("!sleep 30 & echo started");
    assert_eq!(driver_support::text(&events, "stdout"), "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn dataframes_carry_their_columns_and_figures_their_chart() {
    let mut d = start();
    let events =
        d.run("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [float('nan'), 2.5]})");
    let data = &of_type(&events, "result")[0]["data"];
    assert_eq!(
        data["application/vnd.airlock.data+json"],
        json!({"a": [1, 2], "b": [null, 2.5]})
    );
    let events = d.run(
        "import matplotlib.pyplot as plt\nplt.scatter([1, 2], [3, 4], label='pts')\nplt.show()",
    );
    let chart = &of_type(&events, "display")[0]["data"]["application/vnd.airlock.chart+json"];
    assert_eq!(chart["type"], "scatter");
    assert_eq!(
        chart["elements"][0]["points"],
        json!([[1.0, 3.0], [2.0, 4.0]])
    );
}
