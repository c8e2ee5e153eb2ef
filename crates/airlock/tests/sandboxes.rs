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
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        ..Default::default()
    };
    edit(&mut file);
    let policy = resolve(
        &file,
        &ResolveContext {
            cwd: ws.to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap();
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
                let out = s
                    .exec(
                        &["sh", "-c", &format!("echo box-{i} > who; id -u")],
                        &[],
                        None,
                        None,
                        1 << 16,
                    )
                    .unwrap();
                assert_eq!(
                    (out.stdout.as_slice(), out.exit_code),
                    (&b"1000\n"[..], Some(0))
                );
                let out = s.exec(&["cat", "who"], &[], None, None, 1 << 16).unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout), format!("box-{i}\n"));
                let data = vec![i as u8; 200_000];
                let path = ws.join("data.bin");
                s.session()
                    .write_file(path.to_str().unwrap(), &data)
                    .unwrap();
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
    assert!(common::leftover_cgroups().iter().all(|p| !p
        .to_string_lossy()
        .contains(&format!("airlock-{}-", std::process::id()))));
}

#[test]
fn receipt_and_restrictions_hold_in_a_remote_box() {
    let ws = TempDir::new("remote-holds");
    let mut s = remote(ws.path(), |f| f.limits.pids = Some(64));
    let layers: Vec<String> = s.receipt()["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap().to_string())
        .collect();
    assert!(
        layers.contains(&"seccomp".to_string()) && layers.contains(&"landlock".to_string()),
        "{layers:?}"
    );
    let out = s
        .exec(
            &[
                "sh",
                "-c",
                "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status",
            ],
            &[],
            None,
            None,
            1 << 16,
        )
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CapEff:\t0000000000000000")
            && text.contains("NoNewPrivs:\t1")
            && text.contains("Seccomp:\t2"),
        "{text}"
    );
    let out = s
        .exec(&["cat", "/etc/shadow"], &[], None, None, 1 << 16)
        .unwrap();
    assert_ne!(out.exit_code, Some(0));
}

#[test]
fn network_policy_changes_for_a_running_remote_box() {
    let ws = TempDir::new("remote-net");
    let mut s = remote(ws.path(), |f| {
        f.network.mode = Some(airlock_policy::NetworkMode::Proxy)
    });
    s.set_network(
        &["svc.test".into()],
        &[],
        &["127.0.0.1".into()],
        &["svc.test=127.0.0.1".into()],
    )
    .unwrap();
    let err = s.set_network(&["*".into()], &[], &[], &[]).unwrap_err();
    assert!(err.to_string().contains("--allow-domain"), "{err}");
}

#[test]
fn a_bad_policy_fails_cleanly() {
    let ws = TempDir::new("remote-bad");
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some(ws.path().to_string_lossy().into_owned()),
        ..Default::default()
    };
    let mut policy = resolve(
        &file,
        &ResolveContext {
            cwd: ws.path().to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap();
    policy.cwd = "/does/not/exist".into();
    let err = RemoteSandbox::start(&airlock_bin(), &policy, &SandboxOptions::default())
        .err()
        .expect("the box cannot start");
    assert!(err.to_string().contains("/does/not/exist"), "{err}");
}

mod interpreter {
    use super::*;
    use airlock_runtime::{CodeEvent, Language};

    fn run(
        s: &mut RemoteSandbox,
        ctx: &mut airlock_runtime::CodeContext,
        code: &str,
        timeout: Option<Duration>,
    ) -> (Vec<CodeEvent>, String) {
        let mut events = Vec::new();
        let end = s
            .session()
            .run_code(ctx, code, &BTreeMap::new(), timeout, |e| {
                events.push(e.clone())
            })
            .unwrap();
        (events, end.status)
    }

    fn result_text(events: &[CodeEvent]) -> Option<String> {
        events.iter().find_map(|e| match e {
            CodeEvent::Result(v) => v["text/plain"].as_str().map(str::to_string),
            _ => None,
        })
    }

    #[test]
    fn python_state_results_figures_and_interrupts_inside_a_box() {
        let ws = TempDir::new("interp-py");
        let mut s = remote(ws.path(), |_| {});
        let mut ctx = s.session().create_context(Language::Python, None).unwrap();
        let (_, status) = run(&mut s, &mut ctx, "x = 41\nimport os", None);
        assert_eq!(status, "ok");
        let (events, _) = run(&mut s, &mut ctx, "x + 1", None);
        assert_eq!(result_text(&events).as_deref(), Some("42"));
        // The driver runs inside the box: its user and capabilities are the box's.
        let (events, _) = run(&mut s, &mut ctx, "print(os.getuid()); print(open('/proc/self/status').read().count('CapEff:\\t0000000000000000'))", None);
        let out: String = events
            .iter()
            .filter_map(|e| {
                if let CodeEvent::Stdout { text, .. } = e {
                    Some(text.clone())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(out, "1000\n1\n");
        // A matplotlib figure comes back as a PNG without show().
        let (events, _) = run(&mut s, &mut ctx, "import matplotlib.pyplot as plt\nplt.figure(figsize=(4,3), dpi=100)\nplt.plot([1,2,3])\n", None);
        let png = events.iter().find_map(|e| match e {
            CodeEvent::Display(v) => v["image/png"].as_str().map(str::to_string),
            _ => None,
        });
        let png = png.unwrap_or_else(|| panic!("a PNG display event: {events:?}"));
        assert!(png.starts_with("iVBORw0KGgo"), "base64 of a PNG signature");
        // An infinite loop is interrupted at the timeout; the state survives.
        let (events, status) = run(
            &mut s,
            &mut ctx,
            "while True: pass",
            Some(Duration::from_millis(500)),
        );
        assert_eq!(status, "interrupted", "{events:?}");
        let (events, _) = run(&mut s, &mut ctx, "x", None);
        assert_eq!(result_text(&events).as_deref(), Some("41"));
        // An exception points at the user's line.
        let (events, status) = run(
            &mut s,
            &mut ctx,
            "a = 1\nb = 2\nraise ValueError('boom')",
            None,
        );
        assert_eq!(status, "error");
        let tb = events
            .iter()
            .find_map(|e| {
                if let CodeEvent::Error {
                    name, traceback, ..
                } = e
                {
                    Some((name.clone(), traceback.join("")))
                } else {
                    None
                }
            })
            .unwrap();
        assert_eq!(tb.0, "ValueError");
        assert!(tb.1.contains("line 3"), "{}", tb.1);
    }

    #[test]
    fn contexts_are_separate_and_a_dead_context_is_reported() {
        let ws = TempDir::new("interp-two");
        let mut s = remote(ws.path(), |f| {
            f.limits.memory = Some(airlock_policy::SizeValue(256 << 20))
        });
        let mut a = s.session().create_context(Language::Python, None).unwrap();
        let mut b = s.session().create_context(Language::Python, None).unwrap();
        run(&mut s, &mut a, "secret = 'only in a'", None);
        let (events, status) = run(&mut s, &mut b, "secret", None);
        assert_eq!(status, "error", "b must not see a's variables: {events:?}");
        // A memory bomb kills only its own context (the box's memory cgroup); the other lives.
        let mut events = Vec::new();
        let err = s.session().run_code(
            &mut b,
            "blocks = []\nwhile True: blocks.append(bytearray(50 << 20))",
            &BTreeMap::new(),
            Some(Duration::from_secs(30)),
            |e| events.push(e.clone()),
        );
        assert!(err.is_err(), "the bomb's context should die: {events:?}");
        let (events, _) = run(&mut s, &mut a, "secret", None);
        assert_eq!(result_text(&events).as_deref(), Some("'only in a'"));
        // A fresh context replaces the dead one.
        let mut c = s.session().create_context(Language::Python, None).unwrap();
        let (events, _) = run(&mut s, &mut c, "1 + 1", None);
        assert_eq!(result_text(&events).as_deref(), Some("2"));
    }

    #[test]
    fn bash_context_keeps_cwd_and_exports() {
        let ws = TempDir::new("interp-bash");
        let mut s = remote(ws.path(), |_| {});
        let mut ctx = s.session().create_context(Language::Bash, None).unwrap();
        run(&mut s, &mut ctx, "cd /tmp && export GREETING=hello", None);
        let (events, status) = run(&mut s, &mut ctx, "pwd; echo $GREETING", None);
        let out: String = events
            .iter()
            .filter_map(|e| {
                if let CodeEvent::Stdout { text, .. } = e {
                    Some(text.clone())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!((out.as_str(), status.as_str()), ("/tmp\nhello\n", "ok"));
    }

    #[test]
    fn javascript_context_keeps_state() {
        let ws = TempDir::new("interp-js");
        let mut s = remote(ws.path(), |_| {});
        let mut ctx = s
            .session()
            .create_context(Language::JavaScript, None)
            .unwrap();
        run(&mut s, &mut ctx, "let x = 41", None);
        let (events, status) = run(&mut s, &mut ctx, "x + 1", None);
        assert_eq!(
            (result_text(&events).as_deref(), status.as_str()),
            (Some("42"), "ok")
        );
    }
}
