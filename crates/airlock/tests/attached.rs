//! The generic attached run (`Backend::run_attached`'s default, `run_over_agent`): one command in
//! a fresh box, relayed through the box's agent. Every backend without a one-shot path of its
//! own gets `airlock run` this way. The native backend has its own path (its supervisor), so here
//! the generic one is driven directly against a real box of the test backend
//! (`AIRLOCK_TEST_BACKEND`, native by default): stdio, exit codes, the deadline, the output cap,
//! signals, a command that cannot start, and nothing left behind.
#![allow(clippy::unwrap_used)]

mod common;

use airlock_policy::{resolve, LimitsSection, PolicyFile, ResolveContext, SizeValue};
use airlock_runtime::attached::{run_over_agent_with, RunOptions, StdinMode, Stdio};
use airlock_runtime::backend::Template;
use airlock_runtime::{LimitHit, RealHost, RunResult};
use common::TempDir;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

fn policy(
    ws: &std::path::Path,
    edit: impl FnOnce(&mut PolicyFile),
) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(common::test_backend_kind()),
        ..Default::default()
    };
    file.filesystem.changes = Some(airlock_policy::ChangesMode::Direct);
    edit(&mut file);
    resolve(
        &file,
        &ResolveContext {
            cwd: ws.to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap()
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: a valid array for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are new and ours.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn drain(fd: OwnedFd) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut f = std::fs::File::from(fd);
        let mut out = Vec::new();
        let _ = f.read_to_end(&mut out);
        out
    })
}

/// Runs `argv` attached to pipes: `input` on its stdin; what it printed.
fn attached(
    policy: &airlock_policy::ResolvedPolicy,
    argv: &[&str],
    input: Option<&[u8]>,
) -> (RunResult, String, String) {
    let backend = common::test_backend();
    let (in_r, in_w) = pipe();
    let (out_r, out_w) = pipe();
    let (err_r, err_w) = pipe();
    // Fed on a thread: more than a pipe holds.
    let data = input.map(<[u8]>::to_vec).unwrap_or_default();
    let feeder = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut std::fs::File::from(in_w), &data);
    });
    let (out, err) = (drain(out_r), drain(err_r));
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let result = run_over_agent_with(
        backend.as_ref(),
        policy,
        &Template::Host,
        &argv,
        &RunOptions {
            stdin: if input.is_some() {
                StdinMode::Auto
            } else {
                StdinMode::Null
            },
            ..RunOptions::default()
        },
        Stdio {
            stdin: in_r.as_raw_fd(),
            stdout: out_w.as_raw_fd(),
            stderr: err_w.as_raw_fd(),
        },
    )
    .unwrap();
    drop((out_w, err_w));
    let out = String::from_utf8(out.join().unwrap()).unwrap();
    let err = String::from_utf8(err.join().unwrap()).unwrap();
    drop(in_r);
    feeder.join().unwrap();
    (result, out, err)
}

#[test]
fn output_streams_and_exit_code_arrive_as_the_command_gave_them() {
    let ws = TempDir::new("attached-io");
    let p = policy(ws.path(), |_| {});
    let (r, out, err) = attached(&p, &["sh", "-c", "echo out; echo err >&2; exit 7"], None);
    assert_eq!((r.exit_code, r.command_exit_code), (7, Some(7)), "{r:?}");
    assert_eq!(out, "out\n");
    assert_eq!(err, "err\n");
    assert_eq!((r.stdout_bytes, r.stderr_bytes), (4, 4));
    assert!(r.error.is_none(), "{r:?}");
    assert!(
        !r.receipt.layers.is_empty(),
        "the result carries the box's receipt"
    );
}

#[test]
fn stdin_is_relayed_to_the_end() {
    let ws = TempDir::new("attached-stdin");
    let p = policy(ws.path(), |_| {});
    let data: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let (r, out, _) = attached(&p, &["sh", "-c", "wc -c; echo done"], Some(&data));
    assert_eq!(r.exit_code, 0, "{r:?}");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["200000", "done"]
    );
}

#[test]
fn a_command_that_cannot_start_is_127_with_a_reason() {
    let ws = TempDir::new("attached-missing");
    let p = policy(ws.path(), |_| {});
    let (r, _, _) = attached(&p, &["/no/such/program"], None);
    assert_eq!(r.exit_code, 127, "{r:?}");
    let why = r.error.unwrap_or_default();
    assert!(why.contains("/no/such/program"), "{why}");
}

#[test]
fn a_signal_death_is_128_plus_the_signal() {
    let ws = TempDir::new("attached-signal");
    let p = policy(ws.path(), |_| {});
    let (r, _, _) = attached(&p, &["sh", "-c", "kill -TERM $$"], None);
    assert_eq!(
        (r.exit_code, r.signal),
        (128 + libc::SIGTERM, Some(libc::SIGTERM)),
        "{r:?}"
    );
}

#[test]
fn the_deadline_kills_the_command_and_is_124() {
    let ws = TempDir::new("attached-timeout");
    let p = policy(ws.path(), |f| {
        f.limits = LimitsSection {
            timeout: Some(airlock_policy::DurationValue(Duration::from_secs(1))),
            ..LimitsSection::default()
        }
    });
    let marker = format!("attached-timeout-{}", std::process::id());
    let t = Instant::now();
    let (r, _, _) = attached(&p, &["sh", "-c", &format!("sleep 60; : {marker}")], None);
    assert_eq!(r.exit_code, 124, "{r:?}");
    assert!(r.limits_hit.contains(&LimitHit::Timeout), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(
        common::pids_with_marker(&marker).is_empty(),
        "the killed command is gone from the host"
    );
}

#[test]
fn the_output_cap_cuts_the_output_and_kills_the_command() {
    let ws = TempDir::new("attached-output");
    let p = policy(ws.path(), |f| {
        f.limits = LimitsSection {
            output_limit: Some(SizeValue(10 * 1024)),
            ..LimitsSection::default()
        }
    });
    let (r, out, err) = attached(&p, &["sh", "-c", "yes; echo never >&2"], None);
    assert!(r.limits_hit.contains(&LimitHit::Output), "{r:?}");
    assert_eq!(
        out.len() + err.len(),
        10 * 1024,
        "exactly the cap is relayed"
    );
    assert_eq!(r.stdout_bytes + r.stderr_bytes, 10 * 1024);
    assert_ne!(r.exit_code, 0, "{r:?}");
}

#[test]
fn the_box_is_gone_when_the_run_returns() {
    let ws = TempDir::new("attached-cleanup");
    let p = policy(ws.path(), |_| {});
    let marker = format!("attached-bg-{}", std::process::id());
    // A background process that would outlive its parent shell if the box were left running.
    let script = format!("(sleep 60; : {marker}) & echo started");
    let mounts = common::host_mounts();
    let (r, out, _) = attached(&p, &["sh", "-c", &script], None);
    assert_eq!((r.exit_code, out.as_str()), (0, "started\n"), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !common::pids_with_marker(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_with_marker(&marker).is_empty(),
        "the box's processes are gone"
    );
    assert_eq!(common::host_mounts(), mounts, "no mount left behind");
}

#[test]
fn a_change_layer_or_control_channel_is_refused_with_a_sentence() {
    let ws = TempDir::new("attached-refusals");
    let backend = common::test_backend();
    let mut p = policy(ws.path(), |_| {});
    p.changes = airlock_policy::ChangesMode::Apply;
    let err = run_over_agent_with(
        backend.as_ref(),
        &p,
        &Template::Host,
        &["true".into()],
        &RunOptions::default(),
        Stdio::INHERIT,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("--changes direct"), "{err}");
    p.changes = airlock_policy::ChangesMode::Direct;
    let err = run_over_agent_with(
        backend.as_ref(),
        &p,
        &Template::Host,
        &["true".into()],
        &RunOptions {
            control_fd: Some(0),
            ..RunOptions::default()
        },
        Stdio::INHERIT,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("--control-fd"), "{err}");
}
