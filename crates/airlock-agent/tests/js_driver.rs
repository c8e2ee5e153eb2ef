#![allow(clippy::unwrap_used)]
//! The JavaScript code-interpreter driver (`drivers/js_driver.js`) run under `/usr/bin/node`:
//! state across executions, results, streamed output and its cap, tracebacks that point at
//! the user's cell, syntax errors, SIGINT, per-execution env and top-level await.

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/drivers/js_driver.js");
const TIMEOUT: Duration = Duration::from_secs(60);

/// A running driver: requests go to its stdin, events come back from its fd 3.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    events: Receiver<Value>,
    next_id: u32,
}

impl Driver {
    fn start() -> Self {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid two-element array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let write_fd = write_end.as_raw_fd();
        let mut command = Command::new("/usr/bin/node");
        command
            .arg(DRIVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // SAFETY: the closure only calls dup2/fcntl, which are async-signal-safe and allocate nothing.
        unsafe {
            command.pre_exec(move || {
                if write_fd == 3 {
                    // dup2 onto itself keeps FD_CLOEXEC; clear it so fd 3 survives exec.
                    if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(write_fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        drop(write_end);
        let stdin = child.stdin.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(File::from(read_end)).lines() {
                let Ok(line) = line else { break };
                let event: Value = serde_json::from_str(&line).unwrap();
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Driver {
            child,
            stdin,
            events,
            next_id: 0,
        }
    }

    fn send(&mut self, code: &str, env: Option<Value>) -> String {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        let mut request = json!({"id": id, "code": code});
        if let Some(env) = env {
            request["env"] = env;
        }
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        id
    }

    /// Events of request `id` up to and including its `end`.
    fn collect(&mut self, id: &str) -> Vec<Value> {
        let deadline = Instant::now() + TIMEOUT;
        let mut events = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no `end` for {id} ({e}); got {events:?}"));
            assert_eq!(event["id"], id, "event for another request: {event}");
            let done = event["type"] == "end";
            events.push(event);
            if done {
                return events;
            }
        }
    }

    fn run(&mut self, code: &str) -> Vec<Value> {
        let id = self.send(code, None);
        self.collect(&id)
    }

    fn interrupt(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: kill has no memory-safety preconditions; the pid is our own live child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn end_status(events: &[Value]) -> &str {
    let end = events.last().unwrap();
    assert_eq!(end["type"], "end");
    end["status"].as_str().unwrap()
}

fn result_plain(events: &[Value]) -> Option<String> {
    of_type(events, "result")
        .first()
        .map(|r| r["data"]["text/plain"].as_str().unwrap().to_owned())
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
    let mut d = Driver::start();
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
    let mut d = Driver::start();
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
    let mut d = Driver::start();
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
    let mut d = Driver::start();
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
    let mut d = Driver::start();
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
    let mut d = Driver::start();
    let id = d.send("process.env.AIRLOCK_K", Some(json!({"AIRLOCK_K": "V"})));
    let events = d.collect(&id);
    assert_eq!(result_plain(&events).as_deref(), Some("'V'"));
    let after = d.run("'AIRLOCK_K' in process.env");
    assert_eq!(result_plain(&after).as_deref(), Some("false"));
}

#[test]
fn huge_output_is_capped_not_fatal() {
    let mut d = Driver::start();
    let events = d.run("console.log(\"x\".repeat(10000000));\nconsole.log(\"after\");");
    assert_eq!(end_status(&events), "ok");
    let stdout: usize = of_type(&events, "stdout")
        .iter()
        .map(|e| e["text"].as_str().unwrap().len())
        .sum();
    assert!(stdout <= 1024 * 1024, "{stdout} bytes");
    let truncated = of_type(&events, "stderr");
    assert_eq!(truncated.len(), 1, "one truncation notice");
    assert_eq!(truncated[0]["text"], "[output truncated]");
    // The cap is per execution.
    let next = d.run("console.log('fresh')");
    assert_eq!(of_type(&next, "stdout")[0]["text"], "fresh\n");
}

#[test]
fn top_level_await_runs_to_completion() {
    let mut d = Driver::start();
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
    let mut d = Driver::start();
    writeln!(d.stdin, "{{\"id\": \"bad\", \"code\": 5}}").unwrap();
    d.stdin.flush().unwrap();
    let events = d.collect("bad");
    assert_eq!(end_status(&events), "error");
    assert_eq!(of_type(&events, "error")[0]["name"], "ProtocolError");
    assert_eq!(result_plain(&d.run("1 + 1")).as_deref(), Some("2"));
}
