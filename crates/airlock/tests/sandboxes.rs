//! Long-lived sandboxes driven from a multi-threaded program: each box is held by its own
//! `airlock sandbox-host` process, and the test talks to the box's agent directly.
#![allow(clippy::unwrap_used)]

mod common;

use airlock_policy::{resolve, PolicyFile, ResolveContext};
use airlock_runtime::{RealHost, RemoteSandbox, SandboxOptions};
use common::{airlock_bin, TempDir};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn remote(ws: &std::path::Path, edit: impl FnOnce(&mut PolicyFile)) -> RemoteSandbox {
    let env = BTreeMap::new();
    let mut file = PolicyFile { workspace: Some(ws.to_string_lossy().into_owned()), ..Default::default() };
    edit(&mut file);
    let policy = resolve(&file, &ResolveContext { cwd: ws.to_path_buf(), env: &env, host: &RealHost }).unwrap();
    RemoteSandbox::start(&airlock_bin(), &policy, &SandboxOptions::default()).unwrap()
}

fn pid_alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn state_persists_and_boxes_run_side_by_side_from_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let ws = TempDir::new(&format!("remote-{i}"));
                let mut s = remote(ws.path(), |_| {});
                let out = s.exec(&["sh", "-c", &format!("echo box-{i} > who; id -u")], &[], None, None, 1 << 16).unwrap();
                assert_eq!((out.stdout.as_slice(), out.exit_code), (&b"1000\n"[..], Some(0)));
                let out = s.exec(&["cat", "who"], &[], None, None, 1 << 16).unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout), format!("box-{i}\n"));
                let data = vec![i as u8; 200_000];
                let path = ws.join("data.bin");
                s.session().write_file(path.to_str().unwrap(), &data).unwrap();
                assert_eq!(s.session().read_file(path.to_str().unwrap()).unwrap(), data);
                let init = s.init_pid();
                assert!(pid_alive(init));
                s.kill();
                let deadline = Instant::now() + Duration::from_secs(5);
                while pid_alive(init) {
                    assert!(Instant::now() < deadline, "the box outlived kill()");
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(common::leftover_cgroups().iter().all(|p| !p.to_string_lossy().contains(&format!("airlock-{}-", std::process::id()))));
}

#[test]
fn receipt_and_restrictions_hold_in_a_remote_box() {
    let ws = TempDir::new("remote-holds");
    let mut s = remote(ws.path(), |f| f.limits.pids = Some(64));
    let layers: Vec<String> = s.receipt()["layers"].as_array().unwrap().iter().map(|l| l["layer"].as_str().unwrap().to_string()).collect();
    assert!(layers.contains(&"seccomp".to_string()) && layers.contains(&"landlock".to_string()), "{layers:?}");
    let out = s.exec(&["sh", "-c", "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status"], &[], None, None, 1 << 16).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("CapEff:\t0000000000000000") && text.contains("NoNewPrivs:\t1") && text.contains("Seccomp:\t2"), "{text}");
    let out = s.exec(&["cat", "/etc/shadow"], &[], None, None, 1 << 16).unwrap();
    assert_ne!(out.exit_code, Some(0));
}

#[test]
fn network_policy_changes_for_a_running_remote_box() {
    let ws = TempDir::new("remote-net");
    let mut s = remote(ws.path(), |f| f.network.mode = Some(airlock_policy::NetworkMode::Proxy));
    s.set_network(&["svc.test".into()], &[], &["127.0.0.1".into()], &["svc.test=127.0.0.1".into()]).unwrap();
    let err = s.set_network(&["*".into()], &[], &[], &[]).unwrap_err();
    assert!(err.to_string().contains("--allow-domain"), "{err}");
}

#[test]
fn a_bad_policy_fails_cleanly() {
    let ws = TempDir::new("remote-bad");
    let env = BTreeMap::new();
    let file = PolicyFile { workspace: Some(ws.path().to_string_lossy().into_owned()), ..Default::default() };
    let mut policy = resolve(&file, &ResolveContext { cwd: ws.path().to_path_buf(), env: &env, host: &RealHost }).unwrap();
    policy.cwd = "/does/not/exist".into();
    let err = RemoteSandbox::start(&airlock_bin(), &policy, &SandboxOptions::default()).err().expect("the box cannot start");
    assert!(err.to_string().contains("/does/not/exist"), "{err}");
}
