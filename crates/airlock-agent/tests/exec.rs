//! Processes through the agent: output, stdin, pty, signals, timeouts, background processes,
//! reaping, and cleanup when the host goes away.
#![allow(clippy::unwrap_used)]

mod support;

use airlock_protocol::{Empty, ErrorCode, Event, ExecReply, Frame, Op, ProcessList, TtySize};
use std::time::{Duration, Instant};
use support::{exec_req, exit_of, start};

#[test]
fn echo_streams_stdout_then_eof_then_exit() {
    let mut a = start();
    let r = a.client.exec(exec_req(&["echo", "hello", "world"]));
    let stderr = r.stderr.unwrap();
    assert!(r.stdin.is_none());
    assert!(
        r.stdout % 2 == 1 && stderr % 2 == 1,
        "agent channels are odd"
    );
    let f = a.client.finish(r.pid, &[r.stdout, stderr]);
    assert_eq!(f.out[&r.stdout], b"hello world\n");
    assert!(f.out[&stderr].is_empty());
    assert_eq!(f.eofs.len(), 2, "both streams end before the exit event");
    assert_eq!(exit_of(&f.exit), (Some(0), None, false));

    let r = a
        .client
        .exec(exec_req(&["sh", "-c", "echo oops >&2; exit 3"]));
    let f = a.client.finish(r.pid, &[r.stdout, r.stderr.unwrap()]);
    assert_eq!(f.out[&r.stderr.unwrap()], b"oops\n");
    assert_eq!(exit_of(&f.exit), (Some(3), None, false));
    assert_eq!(a.finish(), 0);
}

#[test]
fn exec_errors_are_replies() {
    let mut a = start();
    let err = a
        .client
        .call(Op::Exec(exec_req(&["definitely-not-a-program"])))
        .body::<ExecReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    let mut req = exec_req(&["true"]);
    req.cwd = Some("/nonexistent/dir".into());
    assert_eq!(
        a.client
            .call(Op::Exec(req))
            .body::<ExecReply>()
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
    let mut req = exec_req(&["env"]);
    req.env.insert("ONLY".into(), "this".into());
    let r = a.client.exec(req);
    let f = a.client.finish(r.pid, &[r.stdout]);
    let out = String::from_utf8(f.out[&r.stdout].clone()).unwrap();
    assert!(
        out.contains("ONLY=this") && out.lines().count() == 2,
        "environment is exactly the request's: {out}"
    );
    assert_eq!(a.finish(), 0);
}

#[test]
fn stdin_round_trip_through_cat() {
    let mut a = start();
    let mut req = exec_req(&["cat"]);
    req.stdin = true;
    let r = a.client.exec(req);
    let stdin = r.stdin.unwrap();
    // 3 MiB, more than a pipe and the socket buffers hold: exercises the stdin queue and
    // output flow control.
    let payload: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    for chunk in payload.chunks(100_000) {
        a.client.send(&Frame::data(stdin, chunk.to_vec()).unwrap());
    }
    a.client.send(&Frame::eof(stdin));
    let f = a.client.finish(r.pid, &[r.stdout]);
    assert!(
        f.out[&r.stdout] == payload,
        "cat echoed {} bytes",
        f.out[&r.stdout].len()
    );
    assert_eq!(exit_of(&f.exit), (Some(0), None, false));
    assert_eq!(a.finish(), 0);
}

#[test]
fn pty_is_a_terminal_and_resizes() {
    let mut a = start();
    let mut req = exec_req(&["tty"]);
    req.tty = Some(TtySize { rows: 24, cols: 80 });
    let r = a.client.exec(req);
    assert!(r.stderr.is_none());
    let f = a.client.finish(r.pid, &[r.stdout]);
    let out = String::from_utf8_lossy(&f.out[&r.stdout]).into_owned();
    assert!(out.starts_with("/dev/pts/"), "{out:?}");
    assert_eq!(exit_of(&f.exit), (Some(0), None, false));

    let mut req = exec_req(&["sh", "-c", "stty size; read x; stty size"]);
    req.tty = Some(TtySize { rows: 24, cols: 80 });
    req.stdin = true;
    let r = a.client.exec(req);
    a.client.read_until(r.stdout, "24 80");
    a.client
        .call(Op::Resize {
            pid: r.pid,
            rows: 40,
            cols: 100,
        })
        .body::<Empty>()
        .unwrap();
    a.client
        .send(&Frame::data(r.stdin.unwrap(), b"go\n".to_vec()).unwrap());
    a.client.read_until(r.stdout, "40 100");
    let f = a.client.finish(r.pid, &[r.stdout]);
    assert_eq!(exit_of(&f.exit), (Some(0), None, false));

    // Resize of a process without a tty is refused with a stable code.
    let r = a.client.exec(exec_req(&["sleep", "5"]));
    let err = a
        .client
        .call(Op::Resize {
            pid: r.pid,
            rows: 1,
            cols: 1,
        })
        .body::<Empty>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Unsupported);
    assert_eq!(a.finish(), 0);
}

#[test]
fn signals_reach_the_process_group() {
    let mut a = start();
    let r = a.client.exec(exec_req(&["sleep", "30"]));
    a.client
        .call(Op::Signal {
            pid: r.pid,
            signal: libc::SIGTERM,
        })
        .body::<Empty>()
        .unwrap();
    let f = a.client.finish(r.pid, &[r.stdout, r.stderr.unwrap()]);
    assert_eq!(exit_of(&f.exit), (None, Some(libc::SIGTERM), false));
    let err = a
        .client
        .call(Op::Signal {
            pid: r.pid,
            signal: 9,
        })
        .body::<Empty>()
        .unwrap_err();
    assert_eq!(
        err.code,
        ErrorCode::NotFound,
        "no signal to a finished process"
    );
    assert_eq!(a.finish(), 0);
}

#[test]
fn timeout_kills_the_group() {
    let mut a = start();
    let mut req = exec_req(&["sh", "-c", "sleep 30 & sleep 30"]);
    req.timeout_ms = Some(300);
    let t = Instant::now();
    let r = a.client.exec(req);
    let f = a.client.finish(r.pid, &[r.stdout, r.stderr.unwrap()]);
    assert_eq!(exit_of(&f.exit), (None, Some(libc::SIGKILL), true));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(a.finish(), 0);
}

#[test]
fn background_process_listed_and_attached() {
    let mut a = start();
    let mut req = exec_req(&["sh", "-c", "echo started; while true; do sleep 0.05; done"]);
    req.tag = Some("server".into());
    let r = a.client.exec(req);
    a.client.read_until(r.stdout, "started");
    // The host stops reading: Eof on the output channels detaches them.
    a.client.send(&Frame::eof(r.stdout));
    a.client.send(&Frame::eof(r.stderr.unwrap()));
    let list: ProcessList = a.client.call(Op::ListProcesses).body().unwrap();
    let p = list.processes.iter().find(|p| p.pid == r.pid).unwrap();
    assert_eq!(p.tag.as_deref(), Some("server"));
    assert!(p.running);
    assert_eq!(p.argv[0], "sh");

    let at: ExecReply = a
        .client
        .call(Op::Attach {
            pid: r.pid,
            replay: true,
        })
        .body()
        .unwrap();
    assert_ne!(at.stdout, r.stdout);
    assert_eq!(a.client.read_until(at.stdout, "started"), "started\n");
    a.client
        .call(Op::Signal {
            pid: r.pid,
            signal: libc::SIGKILL,
        })
        .body::<Empty>()
        .unwrap();
    let f = a.client.finish(r.pid, &[at.stdout, at.stderr.unwrap()]);
    assert_eq!(exit_of(&f.exit), (None, Some(libc::SIGKILL), false));
    let list: ProcessList = a.client.call(Op::ListProcesses).body().unwrap();
    assert!(
        !list
            .processes
            .iter()
            .find(|p| p.pid == r.pid)
            .unwrap()
            .running
    );
    let err = a
        .client
        .call(Op::Attach {
            pid: r.pid,
            replay: false,
        })
        .body::<ExecReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert_eq!(a.finish(), 0);
}

fn children_of(pid: i32) -> Vec<(i32, char)> {
    let list =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    list.split_whitespace()
        .filter_map(|c| {
            let c: i32 = c.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{c}/stat")).ok()?;
            let state = stat.rsplit(')').next()?.trim().chars().next()?;
            Some((c, state))
        })
        .collect()
}

#[test]
fn orphans_are_reaped() {
    let mut a = start();
    // The shell exits at once; its grandchild is re-parented to the agent and exits later.
    let r = a.client.exec(exec_req(&[
        "sh",
        "-c",
        "(sleep 0.3 >/dev/null 2>&1 &); exit 0",
    ]));
    let f = a.client.finish(r.pid, &[r.stdout, r.stderr.unwrap()]);
    assert_eq!(exit_of(&f.exit), (Some(0), None, false));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_orphan = false;
    loop {
        let kids = children_of(a.pid);
        saw_orphan |= !kids.is_empty();
        if kids.is_empty() && saw_orphan {
            break;
        }
        assert!(Instant::now() < deadline, "children left: {kids:?}");
        std::thread::sleep(Duration::from_millis(50));
        // Keep the agent busy to prove it still serves while reaping.
        a.client.call(Op::Ping).body::<Empty>().unwrap();
    }
    assert!(children_of(a.pid).iter().all(|(_, s)| *s != 'Z'));
    assert_eq!(a.finish(), 0);
}

#[test]
fn host_closing_kills_everything() {
    let mut a = start();
    let r = a
        .client
        .exec(exec_req(&["sh", "-c", "sleep 60 & sleep 60"]));
    std::thread::sleep(Duration::from_millis(100));
    let pids: Vec<i32> = children_of(a.pid).into_iter().map(|(p, _)| p).collect();
    assert!(pids.contains(&r.pid));
    let agent_pid = a.pid;
    assert_eq!(a.finish(), 0, "serve returns Ok when the host closes");
    // SAFETY: probing with signal 0.
    assert!(unsafe { libc::kill(r.pid, 0) } != 0, "the process is gone");
    assert!(children_of(agent_pid).is_empty());
}

#[test]
fn exit_event_shape() {
    let mut a = start();
    let r = a.client.exec(exec_req(&["false"]));
    let e = a
        .client
        .wait_event(|e| matches!(e, Event::Exit { pid, .. } if *pid == r.pid));
    assert_eq!(
        e,
        Event::Exit {
            pid: r.pid,
            code: Some(1),
            signal: None,
            timed_out: false
        }
    );
    assert_eq!(a.finish(), 0);
}

struct DenyExec;
impl airlock_agent::AgentHooks for DenyExec {
    fn pre_exec(&self) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(libc::EPERM))
    }
}

#[test]
fn failing_pre_exec_hook_fails_the_exec() {
    let mut a = support::start_with(&DenyExec);
    let err = a
        .client
        .call(Op::Exec(exec_req(&["true"])))
        .body::<ExecReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PermissionDenied);
    a.client.call(Op::Ping).body::<Empty>().unwrap();
    assert!(children_of(a.pid).is_empty(), "the failed child was reaped");
    assert_eq!(a.finish(), 0);
}
