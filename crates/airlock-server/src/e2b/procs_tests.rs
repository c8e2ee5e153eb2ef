#![allow(clippy::unwrap_used)]

use super::*;

fn exit(code: Option<i32>, signal: Option<i32>) -> ExitInfo {
    ExitInfo {
        pid: 7,
        exit_code: code,
        signal,
        timed_out: false,
    }
}

#[test]
fn end_events_read_like_envd() {
    assert_eq!(
        end_event(&exit(Some(0), None)),
        json!({"event": {"end": {"exitCode": 0, "exited": true, "status": "exit status 0"}}})
    );
    assert_eq!(
        end_event(&exit(Some(2), None)),
        json!({"event": {"end": {"exitCode": 2, "exited": true, "status": "exit status 2", "error": "exit status 2"}}})
    );
    let killed = end_event(&exit(None, Some(9)));
    assert_eq!(killed["event"]["end"]["exitCode"], -1);
    assert_eq!(killed["event"]["end"]["exited"], false);
    assert_eq!(killed["event"]["end"]["status"], "signal: killed");
    assert_eq!(
        end_event(&exit(None, Some(15)))["event"]["end"]["status"],
        "signal: terminated"
    );
    assert_eq!(
        end_event(&exit(None, Some(40)))["event"]["end"]["status"],
        "signal: signal 40"
    );
}

#[test]
fn selectors_name_a_pid_or_the_newest_process_with_a_tag() {
    let procs = Procs::default();
    let entry = |tag: &str| ProcEntry {
        config: ProcessConfig::default(),
        tag: Some(tag.into()),
        stdin: Some(3),
        pty: false,
    };
    procs.insert(10, entry("a"));
    procs.insert(12, entry("a"));
    procs.insert(11, entry("b"));
    let sel = |pid: Option<u32>, tag: Option<&str>| Selector {
        pid,
        tag: tag.map(str::to_string),
    };
    assert_eq!(resolve(&procs, &sel(Some(5), None)), Ok(5));
    assert_eq!(resolve(&procs, &sel(None, Some("a"))), Ok(12));
    assert_eq!(resolve(&procs, &sel(None, Some("b"))), Ok(11));
    assert!(resolve(&procs, &sel(None, Some("zz")))
        .unwrap_err()
        .contains("zz"));
    assert!(resolve(&procs, &sel(None, None)).is_err());
    assert!(resolve(&procs, &sel(Some(u32::MAX), None)).is_err());
    assert_eq!(procs.take_stdin(12), Some(3));
    assert_eq!(procs.take_stdin(12), None, "stdin closes once");
}

#[test]
fn the_table_is_bounded() {
    let procs = Procs::default();
    for pid in 0..(MAX_PROCS as i32 + 10) {
        procs.insert(
            pid,
            ProcEntry {
                config: ProcessConfig::default(),
                tag: None,
                stdin: None,
                pty: false,
            },
        );
    }
    assert_eq!(procs.lock().len(), MAX_PROCS);
    assert!(procs.get(0).is_none() && procs.get(MAX_PROCS as i32 + 9).is_some());
}

#[test]
fn config_round_trips_as_proto3_json() {
    let c: ProcessConfig = serde_json::from_value(json!({"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi"], "envs": {"A": "1"}, "cwd": "/tmp", "unknown": 1})).unwrap();
    assert_eq!(
        c.to_json(),
        json!({"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi"], "envs": {"A": "1"}, "cwd": "/tmp"})
    );
}
