//! A code-interpreter driver under test: requests on its stdin, events read from its fd 3.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A running driver: requests go to its stdin, events come back from its fd 3.
pub struct Driver {
    pub child: Child,
    pub stdin: ChildStdin,
    pub events: Receiver<Value>,
    next_id: u32,
}

impl Driver {
    /// Starts `interpreter driver_file` (a file of crates/airlock-agent/drivers/) with fd 3 a pipe.
    pub fn start(interpreter: &str, driver_file: &str) -> Self {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid two-element array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let write_fd = write_end.as_raw_fd();
        let mut command = Command::new(interpreter);
        command
            .arg(format!(
                "{}/drivers/{driver_file}",
                env!("CARGO_MANIFEST_DIR")
            ))
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

    pub fn send(&mut self, code: &str, env: Option<Value>) -> String {
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
    pub fn collect(&mut self, id: &str) -> Vec<Value> {
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

    pub fn run(&mut self, code: &str) -> Vec<Value> {
        let id = self.send(code, None);
        self.collect(&id)
    }

    pub fn interrupt(&self) {
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

pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

pub fn end_status(events: &[Value]) -> &str {
    let end = events.last().unwrap();
    assert_eq!(end["type"], "end");
    end["status"].as_str().unwrap()
}

/// The `text/plain` of the first result, if any.
pub fn result_plain(events: &[Value]) -> Option<String> {
    of_type(events, "result")
        .first()
        .map(|r| r["data"]["text/plain"].as_str().unwrap().to_owned())
}

/// Every `text` of the events of `kind`, joined.
pub fn text(events: &[Value], kind: &str) -> String {
    of_type(events, kind)
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

/// Every language's output cap: `huge` prints far more than the cap and is cut at 1 MiB with one
/// notice, the execution still ends "ok", and the next execution (`fresh`, which prints
/// `fresh\n`) starts with a new cap. Returns the stdout `huge` got.
pub fn assert_output_is_capped_per_execution(d: &mut Driver, huge: &str, fresh: &str) -> String {
    let events = d.run(huge);
    assert_eq!(end_status(&events), "ok");
    let stdout = text(&events, "stdout");
    assert!(stdout.len() <= 1024 * 1024, "{} bytes", stdout.len());
    let truncated = of_type(&events, "stderr");
    assert_eq!(truncated.len(), 1, "one truncation notice");
    assert_eq!(truncated[0]["text"], "[output truncated]");
    assert_eq!(
        text(&d.run(fresh), "stdout"),
        "fresh\n",
        "the cap is per execution"
    );
    stdout
}
