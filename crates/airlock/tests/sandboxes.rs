//! Long-lived sandboxes driven from a multi-threaded program through the backend seam: each
//! native box is held by its own `airlock sandbox-host` process, and the test talks to the box's
//! agent directly.
#![allow(clippy::unwrap_used)]

mod common;

use airlock_policy::{resolve, BackendKind, PolicyFile, ResolveContext};
use airlock_runtime::backend::{
    BackendError, NetDecision, NetworkEvent, NetworkSink, StartOptions, Template,
};
use airlock_runtime::{LiveSandbox, RealHost};
use common::TempDir;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn policy_for(
    ws: &std::path::Path,
    edit: impl FnOnce(&mut PolicyFile),
) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(common::test_backend_kind()),
        ..Default::default()
    };
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

fn remote(ws: &std::path::Path, edit: impl FnOnce(&mut PolicyFile)) -> LiveSandbox {
    remote_with(ws, edit, &StartOptions::default())
}

fn remote_with(
    ws: &std::path::Path,
    edit: impl FnOnce(&mut PolicyFile),
    opts: &StartOptions,
) -> LiveSandbox {
    let backend = common::test_backend();
    LiveSandbox::start(
        backend.as_ref(),
        &policy_for(ws, edit),
        &Template::Host,
        opts,
    )
    .unwrap()
}

/// The uid the box's processes have. Native: 1000, the box user of its user namespace (files
/// are idmapped to it). microvm: the caller's own uid, with no capabilities — 9p shares have
/// no id mapping, so that is the uid under which files keep the caller's ownership.
/// The box user's uid: 1000 in every kind of box (a microVM's QEMU maps it to the caller).
fn box_uid() -> String {
    "1000".to_string()
}

fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Host pids of processes whose mount table holds `path` (a box's host side, by its workspace).
fn host_pids_mounting(path: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))
                .is_ok_and(|m| m.contains(path))
        })
        .collect()
}

/// Host pids of processes whose command line contains `marker`.
fn host_pids_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

/// A wasm box has no shell and no processes (WASI preview 1 has no process API): its state
/// is files, written and read by CPython for WASI; a shell, or a process left running, is
/// refused with a sentence; and after kill() nothing on the host holds its workspace.
fn wasm_state_and_no_processes(mut s: LiveSandbox, ws: &TempDir, i: usize) {
    let who = ws.join("who");
    let who = who.to_str().unwrap();
    let write = format!("open({who:?}, 'w').write('box-{i}\\n'); print('written')");
    let out = s
        .channel()
        .exec(&["python3", "-c", &write], &[], None, None, 1 << 16)
        .unwrap();
    assert_eq!(
        (String::from_utf8_lossy(&out.stdout).trim(), out.exit_code),
        ("written", Some(0)),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(who).unwrap(), format!("box-{i}\n"));
    let read = format!("print(open({who:?}).read(), end='')");
    let out = s
        .channel()
        .exec(&["python3", "-c", &read], &[], None, None, 1 << 16)
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("box-{i}\n"));
    let data = vec![i as u8; 200_000];
    let path = ws.join("data.bin");
    s.channel()
        .write_file(path.to_str().unwrap(), &data)
        .unwrap();
    assert_eq!(s.channel().read_file(path.to_str().unwrap()).unwrap(), data);
    let marker = format!("1000.{}{i}", std::process::id());
    let cmd = format!("sleep {marker} > /dev/null 2>&1 &");
    let err = s
        .channel()
        .exec(&["sh", "-c", &cmd], &[], None, None, 1 << 16)
        .unwrap_err();
    assert!(
        err.to_string().contains("a wasm box has no processes"),
        "{err}"
    );
    assert!(host_pids_with(&marker).is_empty(), "a refused command ran");
    let ws_text = ws.path().to_string_lossy().into_owned();
    assert!(
        !host_pids_mounting(&ws_text).is_empty(),
        "no box holds the workspace"
    );
    assert!(s.ended().is_none());
    s.kill();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !host_pids_mounting(&ws_text).is_empty() {
        assert!(Instant::now() < deadline, "the box outlived kill()");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn state_persists_and_boxes_run_side_by_side_from_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let ws = TempDir::new(&format!("remote-{i}"));
                let mut s = remote(ws.path(), |_| {});
                if common::test_backend_kind() == BackendKind::Wasm {
                    wasm_state_and_no_processes(s, &ws, i);
                    return;
                }
                let out = s
                    .channel()
                    .exec(
                        &["sh", "-c", &format!("echo box-{i} > who; id -u")],
                        &[],
                        None,
                        None,
                        1 << 16,
                    )
                    .unwrap();
                let uid = box_uid();
                assert_eq!(
                    (String::from_utf8_lossy(&out.stdout).trim(), out.exit_code),
                    (uid.as_str(), Some(0))
                );
                let out = s
                    .channel()
                    .exec(&["cat", "who"], &[], None, None, 1 << 16)
                    .unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout), format!("box-{i}\n"));
                let data = vec![i as u8; 200_000];
                let path = ws.join("data.bin");
                s.channel()
                    .write_file(path.to_str().unwrap(), &data)
                    .unwrap();
                assert_eq!(s.channel().read_file(path.to_str().unwrap()).unwrap(), data);
                // A detached process of the box, found on the host by its unique argument.
                let marker = format!("1000.{}{i}", std::process::id());
                let cmd = format!("sleep {marker} > /dev/null 2>&1 &");
                s.channel()
                    .exec(&["sh", "-c", &cmd], &[], None, None, 1 << 16)
                    .unwrap();
                if common::test_backend_kind() == airlock_policy::BackendKind::Microvm {
                    // A VM's processes live in its own kernel, invisible on the host: the sleep
                    // is found inside, and the VM's end on kill() is checked by microvm.rs
                    // (through a server, whose QEMU children are its boxes alone).
                    let find = format!("grep -l {marker} /proc/[0-9]*/cmdline");
                    let out = s
                        .channel()
                        .exec(&["sh", "-c", &find], &[], None, None, 1 << 16)
                        .unwrap();
                    assert_eq!(out.exit_code, Some(0), "the box's sleep never started");
                    assert!(s.ended().is_none());
                    s.kill();
                    return;
                }
                // gVisor: the box's processes live in the Sentry, not on the host; what the host
                // runs for the box (its host process, runsc, gofer and sandbox) is found by the
                // workspace their mounts hold.
                let gvisor = common::test_backend_kind() == BackendKind::Gvisor;
                let ws_text = ws.path().to_string_lossy().into_owned();
                let on_host = || match gvisor {
                    true => host_pids_mounting(&ws_text),
                    false => host_pids_with(&marker),
                };
                if gvisor {
                    let script =
                        format!("cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c {marker}");
                    let out = s
                        .channel()
                        .exec(&["sh", "-c", &script], &[], None, None, 1 << 16);
                    let out = out.unwrap();
                    assert_ne!(String::from_utf8_lossy(&out.stdout).trim(), "0", "no sleep");
                }
                let deadline = Instant::now() + Duration::from_secs(5);
                while on_host().is_empty() {
                    assert!(Instant::now() < deadline, "the box's sleep never started");
                    std::thread::sleep(Duration::from_millis(10));
                }
                assert!(s.ended().is_none());
                s.kill();
                let deadline = Instant::now() + Duration::from_secs(5);
                while !on_host().is_empty() {
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
    let layers: Vec<String> = s
        .receipt()
        .unwrap()
        .layers
        .iter()
        .map(|l| l.layer.clone())
        .collect();
    let kind = common::test_backend_kind();
    // Every kind of long-lived box says what `user="root"` is there: native, gVisor and microVM
    // boxes have a root of their own (uid 0 of a nested user namespace, no capabilities; in
    // gVisor, one per root command); WASM has no users, and says so.
    let root = s
        .receipt()
        .unwrap()
        .layers
        .iter()
        .find(|l| l.layer == airlock_runtime::ROOT_LAYER)
        .cloned();
    match kind {
        BackendKind::Native | BackendKind::Microvm | BackendKind::Gvisor => assert!(
            root.as_ref()
                .is_some_and(|l| l.status == airlock_runtime::LayerStatus::Enforced
                    && l.mechanism.contains("nested")),
            "{root:?}"
        ),
        BackendKind::Wasm => assert!(
            root.as_ref()
                .is_some_and(|l| l.status == airlock_runtime::LayerStatus::Off
                    && l.detail.contains("no users")),
            "{root:?}"
        ),
    }
    match kind {
        // A VM's boundary is its own kernel under QEMU, jailed (the `vmm` layer); no Landlock
        // in the guest; the native box's seccomp filter is part of its `privileges` layer.
        airlock_policy::BackendKind::Microvm => assert!(
            layers.contains(&"isolation".to_string())
                && layers.contains(&"privileges".to_string())
                && layers.contains(&"vmm".to_string()),
            "{layers:?}"
        ),
        // gVisor: the Sentry answers every system call; the host kernel sees only the
        // Sentry's own filtered set, so the box has no seccomp or Landlock layer of its own.
        BackendKind::Gvisor => {
            let kernel = s
                .receipt()
                .unwrap()
                .layers
                .iter()
                .find(|l| l.layer == "kernel");
            assert!(
                kernel.is_some_and(|l| l.mechanism.contains("gVisor Sentry")),
                "{layers:?}"
            );
        }
        _ => assert!(
            layers.contains(&"seccomp".to_string()) && layers.contains(&"landlock".to_string()),
            "{layers:?}"
        ),
    }
    if kind == BackendKind::Wasm {
        // No shell and no /proc for the guest: the confinement's layers (the native box around
        // wasmtime, checked above) cannot be read from inside. What the guest gets instead is
        // said in the receipt, and a path outside its preopens does not exist for it.
        for layer in ["processes", "threads", "sockets", "preopens", "confinement"] {
            assert!(layers.contains(&layer.to_string()), "{layers:?}");
        }
        for path in ["/proc/self/status", "/etc/shadow", "/etc/passwd"] {
            let code = format!("open({path:?}).read()");
            let out = s
                .channel()
                .exec(&["python3", "-c", &code], &[], None, None, 1 << 16)
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_ne!(out.exit_code, Some(0), "{path}: {err}");
            assert!(err.contains("FileNotFoundError"), "{path}: {err}");
        }
        let err = s
            .channel()
            .exec(&["cat", "/etc/shadow"], &[], None, None, 1 << 16)
            .unwrap_err();
        assert!(
            err.to_string().contains("a wasm box has no processes"),
            "{err}"
        );
        return;
    }
    let out = s
        .channel()
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
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if common::test_backend_kind() == BackendKind::Gvisor {
        // gVisor (2022) has no NoNewPrivs line in /proc/self/status: ask prctl instead.
        let out = s
            .channel()
            .exec(
                &[
                    "python3",
                    "-c",
                    "import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))",
                ],
                &[],
                None,
                None,
                1 << 16,
            )
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "1",
            "no_new_privs"
        );
        text.push_str("NoNewPrivs:\t1\n");
    }
    // Every kind filters syscalls (a microVM's guest installs the native box's filter).
    let seccomp = "Seccomp:\t2";
    assert!(
        text.contains("CapEff:\t0000000000000000")
            && text.contains("NoNewPrivs:\t1")
            && text.contains(seccomp),
        "{text}"
    );
    let out = s
        .channel()
        .exec(&["cat", "/etc/shadow"], &[], None, None, 1 << 16)
        .unwrap();
    assert_ne!(out.exit_code, Some(0));
}

/// Keeps every network decision a box's backend reports.
#[derive(Default)]
struct Recorded(Mutex<Vec<NetworkEvent>>);

impl NetworkSink for Recorded {
    fn network_event(&self, event: NetworkEvent) {
        self.0.lock().unwrap().push(event);
    }
}

#[test]
fn network_policy_changes_and_decisions_arrive_as_typed_events() {
    let ws = TempDir::new("remote-net");
    let recorded = Arc::new(Recorded::default());
    let opts = StartOptions {
        network_events: Some(recorded.clone()),
        audit_file: None,
        ..Default::default()
    };
    let edit = |f: &mut PolicyFile| f.network.mode = Some(airlock_policy::NetworkMode::Proxy);
    let mut egress = policy_for(ws.path(), edit).egress;
    if let BackendKind::Wasm = common::test_backend_kind() {
        // WASI preview 1 has no sockets: a wasm box with the proxy is refused before anything
        // starts (fail closed), in a sentence naming the flag and what to use instead.
        let backend = common::test_backend();
        let err = LiveSandbox::start(
            backend.as_ref(),
            &policy_for(ws.path(), edit),
            &Template::Host,
            &opts,
        )
        .err()
        .expect("a wasm box with --net proxy must be refused");
        let text = err.to_string();
        assert!(
            text.contains("--net proxy") && text.contains("--backend native"),
            "{text}"
        );
        assert!(recorded.0.lock().unwrap().is_empty());
        return;
    }
    let mut s = remote_with(ws.path(), edit, &opts);
    assert!(s.capabilities().live_egress);
    egress.allow_domain = vec!["svc.test".into()];
    egress.allow_ip = vec!["127.0.0.1".into()];
    egress.map_host = vec!["svc.test=127.0.0.1".into()];
    s.set_egress(&egress).unwrap();
    egress.allow_domain = vec!["*".into()];
    let err = s.set_egress(&egress).unwrap_err();
    assert!(matches!(err, BackendError::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("--allow-domain"), "{err}");
    // A refused connection (decided by name, never resolved) comes back as a typed event.
    let out = s
        .channel()
        .exec(
            &["curl", "-fsS", "-o", "/dev/null", "http://refused.test/"],
            &[],
            None,
            Some(Duration::from_secs(20)),
            1 << 16,
        )
        .unwrap();
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    // The refusal was recorded before curl heard of it; after a flush its event is here,
    // without waiting or polling.
    s.flush_network_events().unwrap();
    let events = recorded.0.lock().unwrap().clone();
    let e = events
        .iter()
        .find(|e| e.host == "refused.test")
        .unwrap_or_else(|| panic!("no event for refused.test: {events:?}"));
    assert_eq!(e.decision, NetDecision::Deny, "{e:?}");
}

#[test]
fn usage_is_measured_through_the_seam_and_an_ended_box_says_so() {
    let ws = TempDir::new("remote-usage");
    let mut s = remote(ws.path(), |_| {});
    let busy: &[&str] = match common::test_backend_kind() {
        // No shell in a wasm box: the same busy loop in CPython for WASI.
        BackendKind::Wasm => &["python3", "-c", "i = 0\nwhile i < 600000: i += 1"],
        _ => &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done",
        ],
    };
    let out = s.channel().exec(busy, &[], None, None, 1 << 16).unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let usage = s.usage().unwrap();
    assert!(usage.cpu_usec.unwrap_or(0) >= 10_000, "{usage:?}");
    assert!(usage.memory_bytes.unwrap_or(0) > 0, "{usage:?}");
    match common::test_backend_kind() {
        // The guest's processes live in the guest kernel; the host sees one QEMU process.
        airlock_policy::BackendKind::Microvm => assert_eq!(usage.processes, None, "{usage:?}"),
        _ => assert!(usage.processes.unwrap_or(0) >= 1, "{usage:?}"),
    }
    // A box without a proxy says it cannot change its allowlist, instead of pretending.
    let egress = policy_for(ws.path(), |_| {}).egress;
    assert!(!s.capabilities().live_egress);
    assert!(matches!(
        s.set_egress(&egress),
        Err(BackendError::Unsupported { .. })
    ));
    if common::test_backend_kind() == airlock_policy::BackendKind::Microvm {
        // The guest's init is PID 1 of the guest kernel, out of the host's reach; its agent is
        // killed from inside instead (the box's own uid may signal it), which ends the VM.
        let out = s
            .channel()
            .exec(&["sh", "-c", "kill -9 $PPID"], &[], None, None, 1 << 16);
        assert!(out.is_err() || out.is_ok_and(|o| o.exit_code != Some(0)));
        let end = s
            .wait_ended(Duration::from_secs(10))
            .expect("the box's end was noticed");
        assert!(end.reason.contains("ended"), "{end:?}");
        assert!(s.usage().is_err());
        // A microVM pauses (QEMU stops its vCPUs), but not once it has ended.
        assert!(s.capabilities().pause);
        assert!(matches!(s.pause(), Err(BackendError::Ended(_))));
        return;
    }
    // The box's init (the agent) dies, killed from the host: the seam says the box has ended.
    // gVisor: the agent lives in the Sentry, which is what the host can kill (its sandbox
    // process, found by the workspace its mounts hold).
    let init = if common::test_backend_kind() == BackendKind::Gvisor {
        let ws_text = ws.path().to_string_lossy().into_owned();
        let cmd = |p: &i32| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).into_owned())
                .unwrap_or_default()
        };
        // The gofer holds the workspace; the Sentry is its sibling under `runsc run`.
        let gofer = host_pids_mounting(&ws_text)
            .into_iter()
            .find(|p| cmd(p).contains("runsc-gofer"))
            .expect("the box's gofer runs on the host");
        common::children(parent_of(gofer))
            .into_iter()
            .find(|p| cmd(p).contains("runsc-sandbox"))
            .expect("the box's Sentry runs on the host")
    } else if common::test_backend_kind() == BackendKind::Wasm {
        // No process to leave behind in a wasm box: its init is the native box's agent, the
        // process with pid 1 in its namespace among those holding the workspace.
        let ws_text = ws.path().to_string_lossy().into_owned();
        host_pids_mounting(&ws_text)
            .into_iter()
            .find(|p| {
                std::fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|st| {
                    st.lines()
                        .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1"))
                })
            })
            .expect("the box's init runs on the host")
    } else {
        let marker = format!("1000.{}77", std::process::id());
        let cmd = format!("sleep {marker} > /dev/null 2>&1 &");
        s.channel()
            .exec(&["sh", "-c", &cmd], &[], None, None, 1 << 16)
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let sleeper = loop {
            if let Some(p) = host_pids_with(&marker).first() {
                break *p;
            }
            assert!(Instant::now() < deadline, "the box's sleep never started");
            std::thread::sleep(Duration::from_millis(10));
        };
        // The sleep was reparented to the box's init (pid 1 inside), its parent on the host.
        let init = parent_of(sleeper);
        let status = std::fs::read_to_string(format!("/proc/{init}/status")).unwrap();
        assert!(
            status
                .lines()
                .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1")),
            "{status}"
        );
        init
    };
    // SAFETY: SIGKILL to the box's init, a process this test started (through the backend).
    assert_eq!(unsafe { libc::kill(init, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + Duration::from_secs(5);
    let end = s
        .wait_ended(deadline.saturating_duration_since(Instant::now()))
        .expect("the box's end was noticed");
    assert!(end.reason.contains("ended"), "{end:?}");
    assert!(s.usage().is_err());
    // A native box pauses (the cgroup freezer; tests/lifecycle.rs), but not once it has ended
    // (gVisor boxes pause too: tests/gvisor.rs).
    if common::test_backend_kind() != BackendKind::Gvisor {
        assert!(s.capabilities().pause);
        assert!(matches!(s.pause(), Err(BackendError::Ended(_))));
    }
}

#[test]
fn a_bad_policy_fails_cleanly() {
    let ws = TempDir::new("remote-bad");
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some(ws.path().to_string_lossy().into_owned()),
        backend: Some(common::test_backend_kind()),
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
    let backend = common::test_backend();
    let err = LiveSandbox::start(
        backend.as_ref(),
        &policy,
        &Template::Host,
        &StartOptions::default(),
    )
    .err()
    .expect("the box cannot start");
    assert!(err.to_string().contains("/does/not/exist"), "{err}");
}

mod interpreter {
    use super::*;
    use airlock_runtime::{CodeEvent, Language};

    fn run(
        s: &mut LiveSandbox,
        ctx: &mut airlock_runtime::CodeContext,
        code: &str,
        timeout: Option<Duration>,
    ) -> (Vec<CodeEvent>, String) {
        let mut events = Vec::new();
        let end = s
            .channel()
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

    fn error_name(events: &[CodeEvent]) -> Option<String> {
        events.iter().find_map(|e| match e {
            CodeEvent::Error { name, .. } => Some(name.clone()),
            _ => None,
        })
    }

    /// The rest of the interpreter case in a wasm box, where the guest has no /proc, no user
    /// ids and no native extensions (matplotlib), and an interrupted cell loses its state (the
    /// module is stopped; CPython for WASI cannot take a signal).
    fn wasm_interpreter_rest(s: &mut LiveSandbox, ctx: &mut airlock_runtime::CodeContext) {
        let (events, status) = run(s, ctx, "open('/proc/self/status').read()", None);
        assert_eq!(status, "error");
        assert_eq!(error_name(&events).as_deref(), Some("FileNotFoundError"));
        let (events, status) = run(s, ctx, "import matplotlib", None);
        assert_eq!(status, "error");
        assert_eq!(error_name(&events).as_deref(), Some("ModuleNotFoundError"));
        let (events, _) = run(s, ctx, "x", None);
        assert_eq!(result_text(&events).as_deref(), Some("41"));
        let (events, status) = run(s, ctx, "a = 1\nb = 2\nraise ValueError('boom')", None);
        assert_eq!(status, "error");
        let tb = events
            .iter()
            .find_map(|e| match e {
                CodeEvent::Error { traceback, .. } => Some(traceback.join("")),
                _ => None,
            })
            .unwrap();
        assert!(tb.contains("line 3"), "{tb}");
        let err = s
            .channel()
            .run_code(
                ctx,
                "while True: pass",
                &BTreeMap::new(),
                Some(Duration::from_millis(500)),
                |_| {},
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("state is lost"), "{err}");
    }

    #[test]
    fn python_state_results_figures_and_interrupts_inside_a_box() {
        let ws = TempDir::new("interp-py");
        let mut s = remote(ws.path(), |_| {});
        let mut ctx = s.channel().create_context(Language::Python, None).unwrap();
        let (_, status) = run(&mut s, &mut ctx, "x = 41\nimport os", None);
        assert_eq!(status, "ok");
        let (events, _) = run(&mut s, &mut ctx, "x + 1", None);
        assert_eq!(result_text(&events).as_deref(), Some("42"));
        if common::test_backend_kind() == BackendKind::Wasm {
            wasm_interpreter_rest(&mut s, &mut ctx);
            return;
        }
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
        assert_eq!(out, format!("{}\n1\n", box_uid()));
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
        let mut a = s.channel().create_context(Language::Python, None).unwrap();
        let mut b = s.channel().create_context(Language::Python, None).unwrap();
        run(&mut s, &mut a, "secret = 'only in a'", None);
        let (events, status) = run(&mut s, &mut b, "secret", None);
        assert_eq!(status, "error", "b must not see a's variables: {events:?}");
        if let BackendKind::Wasm = common::test_backend_kind() {
            // wasmtime's limiter refuses the guest's growth before the box's limit is reached:
            // the bomb is a clean MemoryError in its own context, which lives on; a is intact.
            let bomb = "blocks = []\nwhile True: blocks.append(bytearray(50 << 20))";
            let (events, status) = run(&mut s, &mut b, bomb, Some(Duration::from_secs(30)));
            assert_eq!(status, "error", "{events:?}");
            assert_eq!(error_name(&events).as_deref(), Some("MemoryError"));
            let (events, _) = run(&mut s, &mut a, "secret", None);
            assert_eq!(result_text(&events).as_deref(), Some("'only in a'"));
            assert!(s.ended().is_none());
            return;
        }
        // A memory bomb kills only its own context (the box's memory cgroup); the other lives.
        let mut events = Vec::new();
        let err = s.channel().run_code(
            &mut b,
            "blocks = []\nwhile True: blocks.append(bytearray(50 << 20))",
            &BTreeMap::new(),
            Some(Duration::from_secs(30)),
            |e| events.push(e.clone()),
        );
        assert!(err.is_err(), "the bomb's context should die: {events:?}");
        if common::test_backend_kind() == BackendKind::Gvisor {
            // gVisor has no OOM killer of its own: the host's kills the Sentry, and with it the
            // whole box (its receipt says so). The box must then be seen as ended.
            assert!(
                s.wait_ended(Duration::from_secs(10)).is_some(),
                "a gVisor box past its memory limit must end"
            );
            return;
        }
        let (events, _) = run(&mut s, &mut a, "secret", None);
        assert_eq!(result_text(&events).as_deref(), Some("'only in a'"));
        // A fresh context replaces the dead one.
        let mut c = s.channel().create_context(Language::Python, None).unwrap();
        let (events, _) = run(&mut s, &mut c, "1 + 1", None);
        assert_eq!(result_text(&events).as_deref(), Some("2"));
    }

    #[test]
    fn bash_context_keeps_cwd_and_exports() {
        let ws = TempDir::new("interp-bash");
        let mut s = remote(ws.path(), |_| {});
        if let BackendKind::Wasm = common::test_backend_kind() {
            // A wasm box runs only CPython for WASI: the context is refused with a sentence.
            let err = s
                .channel()
                .create_context(Language::Bash, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains("runs only Python"), "{err}");
            return;
        }
        let mut ctx = s.channel().create_context(Language::Bash, None).unwrap();
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
        if let BackendKind::Wasm = common::test_backend_kind() {
            // A wasm box runs only CPython for WASI: the context is refused with a sentence.
            let err = s
                .channel()
                .create_context(Language::JavaScript, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains("runs only Python"), "{err}");
            return;
        }
        let mut ctx = s
            .channel()
            .create_context(Language::JavaScript, None)
            .unwrap();
        run(&mut s, &mut ctx, "let x = 41", None);
        let (events, status) = run(&mut s, &mut ctx, "x + 1", None);
        assert_eq!(
            (result_text(&events).as_deref(), status.as_str()),
            (Some("42"), "ok")
        );
    }

    /// The pinned `typescript` package scripts/e2b-clients.sh installs (scripts/test.sh runs it
    /// first); the test fails, saying how to get it, when it is missing.
    fn typescript_compiler() -> std::path::PathBuf {
        let dir = std::env::var_os("E2B_CLIENTS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| common::repo_root().join("target/e2b-clients"));
        let ts = dir.join("typescript/node_modules/typescript");
        assert!(
            ts.join("lib/typescript.js").is_file(),
            "no typescript package at {}: run scripts/e2b-clients.sh",
            ts.display()
        );
        ts
    }

    fn error_of(events: &[CodeEvent]) -> Option<(String, String)> {
        events.iter().find_map(|e| match e {
            CodeEvent::Error { name, value, .. } => Some((name.clone(), value.clone())),
            _ => None,
        })
    }

    #[test]
    fn typescript_context_strips_types_with_the_boxs_own_compiler() {
        let ws = TempDir::new("interp-ts");
        let mut s = remote(ws.path(), |_| {});
        if let BackendKind::Wasm = common::test_backend_kind() {
            let err = s
                .channel()
                .create_context(Language::TypeScript, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains("runs only Python"), "{err}");
            return;
        }
        let mut ctx = s
            .channel()
            .create_context(Language::TypeScript, Some("/tmp"))
            .unwrap();
        // The box's root (the host's system dirs) has no compiler: the cell says so.
        let (events, status) = run(&mut s, &mut ctx, "const n: number = 1; n", None);
        let (name, value) = error_of(&events).unwrap();
        assert_eq!(
            (name.as_str(), status.as_str()),
            ("TypeScriptNotFound", "error")
        );
        assert!(value.contains("npm install -g typescript"), "{value}");
        // One in the working directory's node_modules is found by the next cell.
        let compiler = typescript_compiler();
        s.channel()
            .make_dir("/tmp/node_modules/typescript/lib", true)
            .unwrap();
        for name in ["package.json", "lib/typescript.js"] {
            let data = std::fs::read(compiler.join(name)).unwrap();
            s.channel()
                .write_file(&format!("/tmp/node_modules/typescript/{name}"), &data)
                .unwrap();
        }
        let typed = "interface Box { n: number }\nconst b: Box = { n: 41 }\nb.n + 1";
        let (events, status) = run(&mut s, &mut ctx, typed, None);
        assert_eq!(
            (result_text(&events).as_deref(), status.as_str()),
            (Some("42"), "ok"),
            "{events:?}"
        );
        let (events, _) = run(&mut s, &mut ctx, "b.n as number", None);
        assert_eq!(result_text(&events).as_deref(), Some("41"));
    }
}

/// Runs `script` under `sh` as the box's root; its stdout and exit code.
fn sh_as_root(
    s: &mut LiveSandbox,
    script: &str,
) -> Result<(String, Option<i32>), airlock_runtime::SandboxError> {
    let cmd = airlock_runtime::Command {
        argv: ["sh", "-c", script].map(String::from).to_vec(),
        timeout: Some(Duration::from_secs(60)),
        user: airlock_runtime::ExecUser::Root,
        ..Default::default()
    };
    let mut out = Vec::new();
    let exit = s.channel().exec_stream(
        &cmd,
        |_| {},
        |which, data| {
            if which == airlock_runtime::Stream::Stdout {
                out.extend_from_slice(data);
            }
            true
        },
    )?;
    Ok((String::from_utf8_lossy(&out).into_owned(), exit.exit_code))
}

/// Runs `script` under `sh` as the box user; its stdout.
fn sh_as_user(s: &mut LiveSandbox, script: &str) -> String {
    let out = s
        .channel()
        .exec(&["sh", "-c", script], &[], None, None, 1 << 16)
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `user="root"` in every kind of box that has one (its receipt's `root` line is enforced):
/// uid 0 of a user namespace nested in the box user's, mapping only the box user. Attack: root,
/// and then the box user joining root's namespace from outside it (where the kernel hands it
/// every capability), go for a file of another host user in the workspace. Both are refused
/// and the file is untouched; root's own files land on the host as the caller's. A box kind
/// without a root refuses a root command as unsupported (the E2B gateway then runs it as the
/// box user, and says so in the receipt).
#[test]
fn root_is_the_box_user_by_another_name_in_every_kind_of_box() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let kind = common::test_backend_kind();
    if kind == BackendKind::Wasm {
        // No users, no shell: the receipt test above checks its `root` line says so.
        let ws = TempDir::new("root-wasm");
        let s = remote(ws.path(), |_| {});
        assert!(!s.receipt().unwrap().has_root());
        s.kill();
        return;
    }
    let ws = TempDir::new("root");
    // SAFETY: geteuid cannot fail.
    let caller = unsafe { libc::geteuid() };
    let foreign = ws.path().join("foreign");
    std::fs::write(&foreign, "not the box's\n").unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o600)).unwrap();
    let foreign_owned = caller == 0;
    if foreign_owned {
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    } else {
        eprintln!("not root, so no file of another user to attack; only the identity is checked");
    }
    let mut s = remote(ws.path(), |_| {});
    if !s.receipt().unwrap().has_root() {
        assert_eq!(kind, BackendKind::Gvisor, "only gVisor boxes lack a root");
        let err = sh_as_root(&mut s, "id -u").unwrap_err().to_string();
        assert!(err.contains("root"), "{err}");
        assert_eq!(sh_as_user(&mut s, "id -u"), "1000\n");
        s.kill();
        return;
    }
    // The Sentry's /proc/self/status has no NoNewPrivs line: in a gVisor box the flag is asked
    // of prctl(PR_GET_NO_NEW_PRIVS) instead, and printed the same way.
    let no_new_privs = match kind {
        BackendKind::Gvisor => {
            "python3 -c 'import ctypes; print(\"NoNewPrivs:\\t%d\" % ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'; "
        }
        _ => "",
    };
    let (out, code) = sh_as_root(
        &mut s,
        &format!(
            "id -u; id -g; {no_new_privs}grep -E '^Cap(Prm|Eff|Bnd)|^NoNewPrivs|^Seccomp:' /proc/self/status; \
             echo mine > by-root.txt; echo kept > /root/note && cat /root/note"
        ),
    )
    .unwrap();
    let expected = match kind {
        BackendKind::Gvisor => "0\n0\nNoNewPrivs:\t1\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nSeccomp:\t2\nkept\n",
        _ => "0\n0\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nkept\n",
    };
    assert_eq!((out.as_str(), code), (expected, Some(0)));
    assert_eq!(
        std::fs::metadata(ws.path().join("by-root.txt"))
            .unwrap()
            .uid(),
        caller,
        "root's file is not the caller's on the host"
    );
    // The box user is still the box user, and root's files are its own by another name.
    assert_eq!(
        sh_as_user(&mut s, "id -u; stat -c %u by-root.txt"),
        "1000\n1000\n"
    );
    if foreign_owned {
        let attack = "cat foreign 2>/dev/null && echo read; echo x >> foreign 2>/dev/null && echo wrote; \
             chmod 666 foreign 2>/dev/null && echo chmodded; chown 0 foreign 2>/dev/null && echo chowned; \
             truncate -s 0 foreign 2>/dev/null && echo truncated; echo done";
        let (out, _) = sh_as_root(&mut s, attack).unwrap();
        assert_eq!(out, "done\n", "root got at another user's file");
        let (pid, _) = sh_as_root(&mut s, "setsid sleep 30 > /dev/null 2>&1 & echo $!").unwrap();
        let pid = pid.trim().to_string();
        assert!(pid.parse::<u32>().is_ok(), "{pid}");
        let out = sh_as_user(
            &mut s,
            &format!(
                "nsenter --preserve-credentials -U -t {pid} sh -c 'grep ^CapEff /proc/self/status; {attack}' 2>&1"
            ),
        );
        if kind == BackendKind::Gvisor {
            // The Sentry refuses to join a user namespace at all (each root command makes its
            // own), so this attack cannot even start: nsenter's setns fails and runs nothing.
            assert!(
                out.contains("Invalid argument")
                    && !out.contains("CapEff")
                    && !out.contains("done"),
                "the box user joined root's namespace in a gVisor box: {out}"
            );
        } else {
            assert!(
                out.starts_with("CapEff:") && !out.starts_with("CapEff:\t0000000000000000"),
                "joining root's namespace from outside gave no capability, so this attack proves nothing: {out}"
            );
            assert!(
                out.ends_with("done\n")
                    && !out.contains("read\n")
                    && !out.contains("wrote")
                    && !out.contains("chmodded")
                    && !out.contains("chowned")
                    && !out.contains("truncated"),
                "the box user got at another user's file through root's namespace: {out}"
            );
        }
    }
    s.kill();
    if foreign_owned {
        let meta = std::fs::metadata(&foreign).unwrap();
        assert_eq!(
            (
                meta.uid(),
                meta.mode() & 0o7777,
                std::fs::read_to_string(&foreign).unwrap().as_str()
            ),
            (65534, 0o600, "not the box's\n")
        );
    }
}
