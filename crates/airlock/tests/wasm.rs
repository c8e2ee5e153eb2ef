//! The WASM box (`--backend wasm`), end to end through the real binary and the real wasmtime:
//! CPython for WASI and hand-written WASI modules, attacks that must fail with a clear error
//! while the host stays untouched, the code interpreter's state across calls, files through
//! the agent, and an image template. Needs CPython for WASI in target/airlock-wasm
//! (scripts/test.sh installs it); without it every test fails, saying how to install it.
#![allow(clippy::unwrap_used)]

mod common;
mod mcp_support;

use airlock_policy::{resolve, PolicyFile, ResolveContext};
use airlock_runtime::backend::{ImageTemplate, StartOptions, Template, TemplateDefaults};
use airlock_runtime::{CodeEvent, Language, LiveSandbox, RealHost};
use common::{airlock, airlock_bin, pids_with_marker, TempDir};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Fails loudly when CPython for WASI is not installed where the backend looks for it.
fn require_python() {
    let dir = airlock_wasm::WasmDir::locate(&airlock_bin());
    assert!(
        dir.python().is_file(),
        "CPython for WASI is missing at {}: run scripts/test.sh, or `{}`",
        dir.python().display(),
        dir.install_command()
    );
}

fn wasm(ws: &Path, flags: &[&str], argv: &[&str]) -> common::Run {
    require_python();
    let mut args = vec!["run", "--backend", "wasm", "--no-stdin"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(argv);
    airlock(ws, &args)
}

fn policy(ws: &Path, edit: impl FnOnce(&mut PolicyFile)) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(airlock_policy::BackendKind::Wasm),
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

fn backends() -> airlock_runtime::backend::Backends {
    airlock_backends::built_in(&airlock_backends::BackendConfig::new(airlock_bin()))
}

fn start(ws: &Path, template: &Template) -> LiveSandbox {
    start_with(ws, template, |_| {})
}

fn start_with(ws: &Path, template: &Template, edit: impl FnOnce(&mut PolicyFile)) -> LiveSandbox {
    require_python();
    let backend = backends()
        .select(airlock_policy::BackendKind::Wasm)
        .unwrap();
    LiveSandbox::start(
        &*backend,
        &policy(ws, edit),
        template,
        &StartOptions::default(),
    )
    .unwrap()
}

/// A WASI command module from WebAssembly text, written into `dir`.
fn module(dir: &Path, name: &str, wat: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, wat::parse_str(wat).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

/// Prints "hello from wasi\n" with fd_write and exits 7.
const HELLO: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from wasi\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (call $exit (i32.const 7))))"#;

#[test]
fn python_and_a_wasm_module_by_path_run_and_the_receipt_says_what_the_box_is() {
    let ws = TempDir::new("wasm-run");
    let r = wasm(
        ws.path(),
        &[],
        &[
            "python3",
            "-c",
            "import sys; print('hi from', sys.platform)",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "hi from wasi\n");
    let hello = module(ws.path(), "hello.wasm", HELLO);
    let r = wasm(ws.path(), &[], &[&hello]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (7, "hello from wasi\n"),
        "{}",
        r.stderr
    );

    let r = airlock(ws.path(), &["receipt", "--backend", "wasm", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let layer = |name: &str| {
        doc["receipt"]["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["layer"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} layer in {doc}"))
    };
    assert!(layer("runtime")["mechanism"]
        .as_str()
        .unwrap()
        .contains("WASI preview 1"));
    assert!(layer("processes")["mechanism"]
        .as_str()
        .unwrap()
        .starts_with("none"));
    assert!(layer("threads")["mechanism"]
        .as_str()
        .unwrap()
        .starts_with("none"));
    assert!(layer("sockets")["mechanism"]
        .as_str()
        .unwrap()
        .starts_with("none"));
    let preopens = layer("preopens")["detail"].as_str().unwrap().to_string();
    assert!(
        preopens.contains(&format!("{} (read-write)", ws.path().display()))
            && preopens.contains("/tmp (read-write)"),
        "{preopens}"
    );
    // And the native box it runs in.
    assert_eq!(layer("seccomp")["status"], "enforced");
    assert_eq!(layer("network")["status"], "enforced");
    // The guest's memory layout follows how the box caps memory: guard pages under a cgroup,
    // bounds checks under RLIMIT_AS (which a 4 GiB reservation would exceed).
    let wasm_memory = layer("wasm-memory")["detail"].as_str().unwrap().to_string();
    let by_cgroup = layer("memory")["status"] == "enforced";
    let want = if by_cgroup {
        "4 GiB reservation with guard pages"
    } else {
        "bounds-checked"
    };
    assert!(
        wasm_memory.contains(want),
        "{wasm_memory} (memory: {})",
        layer("memory")
    );
}

#[test]
fn the_runner_refuses_the_reserved_memory_layout_under_an_address_space_limit() {
    use std::os::unix::process::CommandExt;
    // A module that needs no compiled cache: the runner compiles a .wasm itself.
    let ws = TempDir::new("wasm-as");
    let hello = module(ws.path(), "hello.wasm", HELLO);
    let limited = |style: &str| {
        let mut cmd = std::process::Command::new(airlock_bin());
        cmd.args([
            "wasm-run",
            "--module",
            &hello,
            "--memory-style",
            style,
            "--",
            "hello",
        ]);
        // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let rl = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.output().unwrap()
    };
    let out = limited("reserved");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("RLIMIT_AS is 2147483648 bytes")
            && stderr.contains("--memory-style bounded"),
        "{stderr}"
    );
    // The bounds-checked layout runs under the same limit.
    let out = limited("bounded");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).as_ref()
        ),
        (Some(7), "hello from wasi\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn net_proxy_and_full_access_are_refused_before_anything_starts() {
    let ws = TempDir::new("wasm-net");
    let marker = ws.join("ran");
    let code = format!("open({:?}, 'w')", marker.to_string_lossy());
    for flags in [
        &["--net", "proxy", "--allow-domain", "example.test"][..],
        &["--net", "host"],
        &["--profile", "full-access"],
    ] {
        let r = wasm(ws.path(), flags, &["python3", "-c", &code]);
        assert_eq!(r.code, 125, "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains("a wasm box"), "{flags:?}: {}", r.stderr);
        assert!(!marker.exists(), "{flags:?}: nothing ran");
    }
    let r = airlock(
        ws.path(),
        &[
            "receipt",
            "--backend",
            "wasm",
            "--net",
            "proxy",
            "--allow-domain",
            "example.test",
        ],
    );
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("WASI preview 1 has no sockets"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_host_file_outside_the_preopens_cannot_be_read() {
    let ws = TempDir::new("wasm-read-ws");
    let outside = TempDir::new("wasm-read-victim");
    let victim = outside.join("secret.txt");
    std::fs::write(&victim, "TOPSECRET-wasm").unwrap();
    let code = format!(
        r#"
import os
for p in [{victim:?}, {ws:?} + "/../" + {name:?} + "/secret.txt", "/etc/passwd", "/proc/self/environ"]:
    try:
        print("READ", open(p).read())
    except OSError as e:
        print("DENIED", p, type(e).__name__)
try:
    print("LIST", os.listdir("/"))
except OSError as e:
    print("DENIED / ", type(e).__name__)
"#,
        victim = victim.to_string_lossy(),
        ws = ws.path().to_string_lossy(),
        name = outside.path().file_name().unwrap().to_string_lossy(),
    );
    let r = wasm(ws.path(), &[], &["python3", "-c", &code]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("READ"), "{}", r.stdout);
    assert!(!r.stdout.contains("TOPSECRET"), "{}", r.stdout);
    assert_eq!(r.stdout.matches("DENIED").count(), 5, "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "TOPSECRET-wasm");
}

#[test]
fn a_read_only_grant_and_a_protected_path_cannot_be_written() {
    let ws = TempDir::new("wasm-ro-ws");
    let grant = TempDir::new("wasm-ro-grant");
    let victim = grant.join("victim.txt");
    std::fs::write(&victim, "original").unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let hook = ws.join(".git/hooks/pre-commit");
    let code = format!(
        r#"
import os
for p, mode in [({victim:?}, "w"), ({victim:?}, "a"), ({new:?}, "w"), ({hook:?}, "w")]:
    try:
        open(p, mode).write("pwned")
        print("WROTE", p)
    except OSError as e:
        print("DENIED", p, type(e).__name__)
for f, args in [(os.remove, ({victim:?},)), (os.rename, ({victim:?}, {victim:?} + ".x")), (os.mkdir, ({newdir:?},))]:
    try:
        f(*args)
        print("CHANGED", f.__name__)
    except OSError as e:
        print("DENIED", f.__name__, type(e).__name__)
open({ok:?}, "w").write("fine")
"#,
        victim = victim.to_string_lossy(),
        new = grant.join("new.txt").to_string_lossy(),
        hook = hook.to_string_lossy(),
        newdir = grant.join("d").to_string_lossy(),
        ok = ws.join("ok.txt").to_string_lossy(),
    );
    let grant_flag = grant.path().to_string_lossy().into_owned();
    let r = wasm(
        ws.path(),
        &["--read", &grant_flag],
        &["python3", "-c", &code],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains("WROTE") && !r.stdout.contains("CHANGED"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches("DENIED").count(), 7, "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
    let left: Vec<_> = std::fs::read_dir(grant.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("victim.txt")]);
    assert!(!hook.exists(), "the protected hook was not created");
    // The writable workspace is writable.
    assert_eq!(std::fs::read_to_string(ws.join("ok.txt")).unwrap(), "fine");
}

#[test]
fn a_socket_cannot_be_opened_and_a_listener_on_loopback_sees_nothing() {
    let ws = TempDir::new("wasm-sock");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        r#"
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", {port}))
    print("CONNECTED")
except Exception as e:
    print("DENIED", type(e).__name__)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1)
    print("CONNECTED")
except Exception as e:
    print("DENIED", type(e).__name__)
"#
    );
    let r = wasm(ws.path(), &[], &["python3", "-c", &code]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.matches("DENIED").count(), 2, "{}", r.stdout);
    assert!(!r.stdout.contains("CONNECTED"), "{}", r.stdout);
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the listener was reached: {other:?}"),
    }
}

#[test]
fn a_process_cannot_be_spawned_and_a_shell_is_refused_with_a_sentence() {
    let ws = TempDir::new("wasm-spawn");
    let marker = ws.join("spawned");
    let m = marker.to_string_lossy();
    let code = format!(
        r#"
import os, subprocess
for name, f in [
    ("system", lambda: os.system("touch {m}")),
    ("subprocess", lambda: subprocess.run(["touch", "{m}"])),
    ("fork", lambda: os.fork()),
    ("execv", lambda: os.execv("/bin/sh", ["sh", "-c", "touch {m}"])),
    ("posix_spawn", lambda: os.posix_spawn("/bin/sh", ["sh", "-c", "touch {m}"], {{}})),
]:
    try:
        f()
        print("SPAWNED", name)
    except Exception as e:
        print("DENIED", name, type(e).__name__)
"#
    );
    let r = wasm(ws.path(), &[], &["python3", "-c", &code]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("SPAWNED"), "{}", r.stdout);
    assert_eq!(r.stdout.matches("DENIED").count(), 5, "{}", r.stdout);
    assert!(!marker.exists());
    // Asked for directly, a native program or a shell is refused by the box, not run.
    for argv in [
        &["sh", "-c", &format!("touch {m}")][..],
        &["/usr/bin/touch", &m],
    ] {
        let r = wasm(ws.path(), &[], argv);
        assert_eq!(r.code, 126, "{argv:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("a wasm box has no processes"),
            "{}",
            r.stderr
        );
        assert!(!marker.exists(), "{argv:?}");
    }
}

#[test]
fn a_memory_bomb_gets_a_clean_error_and_the_box_survives_it() {
    let ws = TempDir::new("wasm-mem");
    let r = wasm(
        ws.path(),
        &["--memory", "256M"],
        &["python3", "-c", "x = bytearray(1 << 30)"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("MemoryError"), "{}", r.stderr);
    // A module that grows its memory until refused, then traps.
    let bomb = module(
        ws.path(),
        "bomb.wasm",
        r#"(module
  (memory (export "memory") 1)
  (func (export "_start")
    (loop $grow
      (br_if $grow (i32.ne (memory.grow (i32.const 256)) (i32.const -1))))
    unreachable))"#,
    );
    let t = Instant::now();
    let r = wasm(ws.path(), &["--memory", "64M"], &[&bomb]);
    assert_eq!(r.code, 134, "{}", r.stderr);
    assert!(r.stderr.contains("trapped"), "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(20));
    // Within one box: the interpreter that hit MemoryError answers the next call.
    let mut s = start_with(ws.path(), &Template::Host, |f| {
        f.limits.memory = Some(airlock_policy::SizeValue(256 << 20));
    });
    let mut ctx = s.channel().create_context(Language::Python, None).unwrap();
    let mut events = Vec::new();
    let end = s
        .channel()
        .run_code(
            &mut ctx,
            "b = [bytearray(1 << 26) for _ in range(100)]",
            &BTreeMap::new(),
            None,
            |e| events.push(e.clone()),
        )
        .unwrap();
    assert_eq!(end.status, "error");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CodeEvent::Error { name, .. } if name == "MemoryError")),
        "{events:?}"
    );
    let mut out = Vec::new();
    s.channel()
        .run_code(&mut ctx, "print(6 * 7)", &BTreeMap::new(), None, |e| {
            out.push(e.clone())
        })
        .unwrap();
    assert!(
        out.iter()
            .any(|e| matches!(e, CodeEvent::Stdout { text, .. } if text == "42\n")),
        "{out:?}"
    );
    s.kill();
}

#[test]
fn an_infinite_loop_is_stopped_at_the_timeout_and_leaves_no_process() {
    let ws = TempDir::new("wasm-loop");
    let token = format!("loop-token-{}", std::process::id());
    let code = format!("# {token}\nwhile True: pass");
    let t = Instant::now();
    let r = wasm(ws.path(), &["--timeout", "1s"], &["python3", "-c", &code]);
    assert_eq!(r.code, 124, "{}", r.stderr);
    assert!(
        r.stderr.contains("timeout") || r.stderr.contains("time limit"),
        "{}",
        r.stderr
    );
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    // Through the API, the runner's epoch deadline stops the guest itself (before the agent's
    // kill, which waits a grace period longer): exit 124 and a sentence, not a signal.
    let mut s = start(ws.path(), &Template::Host);
    let t = Instant::now();
    let out = s
        .channel()
        .exec(
            &["python3", "-c", &code],
            &[],
            None,
            Some(Duration::from_millis(500)),
            1 << 20,
        )
        .unwrap();
    assert_eq!((out.exit_code, out.signal), (Some(124), None));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ran past its time limit (500 ms)"));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // The box is fine afterwards.
    let out = s
        .channel()
        .exec(&["python3", "-c", "print(2)"], &[], None, None, 1 << 20)
        .unwrap();
    assert_eq!(out.stdout, b"2\n");
    s.kill();
    let spin = module(
        ws.path(),
        "spin.wasm",
        r#"(module (func (export "_start") (loop $l (br $l))))"#,
    );
    let r = wasm(ws.path(), &["--timeout", "1s"], &[&spin]);
    assert_eq!(r.code, 124, "{}", r.stderr);
    assert!(
        pids_with_marker(&token).is_empty(),
        "a runner was left behind"
    );
}

fn run(
    s: &mut LiveSandbox,
    ctx: &mut airlock_runtime::CodeContext,
    code: &str,
) -> (Vec<CodeEvent>, String) {
    let mut events = Vec::new();
    let end = s
        .channel()
        .run_code(
            ctx,
            code,
            &BTreeMap::new(),
            Some(Duration::from_secs(30)),
            |e| events.push(e.clone()),
        )
        .unwrap();
    (events, end.status)
}

#[test]
fn the_interpreter_keeps_state_reports_user_line_numbers_and_keeps_output_order() {
    let ws = TempDir::new("wasm-code");
    let mut s = start(ws.path(), &Template::Host);
    let mut ctx = s.channel().create_context(Language::Python, None).unwrap();
    let (_, status) = run(&mut s, &mut ctx, "import sys\ncounter = 40\ndef bump():\n    global counter\n    counter += 1\n    return counter");
    assert_eq!(status, "ok");
    let (events, _) = run(&mut s, &mut ctx, "bump()\nbump()");
    assert_eq!(
        events,
        vec![CodeEvent::Result(serde_json::json!({"text/plain": "42"}))]
    );

    let (events, status) = run(
        &mut s,
        &mut ctx,
        "x = 1\n\ndef broken():\n    return 1 / 0\n\nbroken()\n",
    );
    assert_eq!(status, "error");
    let Some(CodeEvent::Error {
        name, traceback, ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(name, "ZeroDivisionError");
    let tb = traceback.join("\n");
    assert!(
        tb.contains("line 6, in <module>") && tb.contains("line 4, in broken"),
        "{tb}"
    );
    assert!(!tb.contains("python_driver"), "{tb}");

    let (events, _) = run(
        &mut s,
        &mut ctx,
        "for i in range(5):\n    print('out', i)\n    print('err', i, file=sys.stderr)",
    );
    let texts: Vec<String> = events
        .iter()
        .map(|e| match e {
            CodeEvent::Stdout { text, .. } => format!("1:{text}"),
            CodeEvent::Stderr { text, .. } => format!("2:{text}"),
            other => format!("{other:?}"),
        })
        .collect();
    let want: Vec<String> = (0..5)
        .flat_map(|i| [format!("1:out {i}\n"), format!("2:err {i}\n")])
        .collect();
    assert_eq!(texts, want);

    // A runaway cell is interrupted at its timeout; the context says its state is lost and a
    // new one works.
    let t = Instant::now();
    let err = s
        .channel()
        .run_code(
            &mut ctx,
            "while True: pass",
            &BTreeMap::new(),
            Some(Duration::from_millis(500)),
            |_| {},
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("state is lost"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let mut fresh = s.channel().create_context(Language::Python, None).unwrap();
    let (events, _) = run(&mut s, &mut fresh, "1 + 1");
    assert_eq!(
        events,
        vec![CodeEvent::Result(serde_json::json!({"text/plain": "2"}))]
    );
    // Other languages need processes a wasm box does not have.
    let err = s
        .channel()
        .create_context(Language::Bash, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("runs only Python"), "{err}");
    s.kill();
}

#[test]
fn files_go_in_and_out_of_the_preopened_directories_only() {
    let ws = TempDir::new("wasm-files");
    let mut s = start(ws.path(), &Template::Host);
    let inside = ws.join("data.txt").to_string_lossy().into_owned();
    s.channel().write_file(&inside, b"uploaded").unwrap();
    assert_eq!(std::fs::read(ws.join("data.txt")).unwrap(), b"uploaded");
    let out = s
        .channel()
        .exec(
            &[
                "python3",
                "-c",
                &format!("print(open({inside:?}).read().upper())"),
            ],
            &[],
            None,
            None,
            1 << 20,
        )
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_slice()),
        (Some(0), &b"UPLOADED\n"[..])
    );
    assert_eq!(s.channel().read_file(&inside).unwrap(), b"uploaded");
    // The box's own system directories exist for its runner, not for the guest or the API.
    for path in ["/etc/passwd", "/usr/bin/python3", "/.airlock-wasm/airlock"] {
        let err = s.channel().read_file(path).unwrap_err().to_string();
        assert!(
            err.contains("does not exist in this wasm box"),
            "{path}: {err}"
        );
    }
    let err = s
        .channel()
        .write_file("/usr/evil", b"x")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist in this wasm box"), "{err}");
    s.kill();
}

#[test]
fn an_image_template_is_preopened_read_only_at_slash_template() {
    let ws = TempDir::new("wasm-image-ws");
    let root = TempDir::new("wasm-image-root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let hello = module(&root.join("bin"), "hello.wasm", HELLO);
    let _ = hello;
    std::fs::write(root.join("motd.txt"), "from the image").unwrap();
    let template = Template::Image(ImageTemplate {
        name: "tiny".into(),
        digest: "sha256:test".into(),
        rootfs: root.path().to_path_buf(),
        defaults: TemplateDefaults {
            env: [("GREETING".to_string(), "hi".to_string())].into(),
            ..Default::default()
        },
    });
    let mut s = start(ws.path(), &template);
    let out = s
        .channel()
        .exec(&["/template/bin/hello.wasm"], &[], None, None, 1 << 20)
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_slice()),
        (Some(7), &b"hello from wasi\n"[..])
    );
    let code = "import os\nprint(open('/template/motd.txt').read(), os.environ['GREETING'])\ntry:\n    open('/template/motd.txt', 'w')\nexcept OSError as e:\n    print('DENIED', type(e).__name__)";
    let out = s
        .channel()
        .exec(&["python3", "-c", code], &[], None, None, 1 << 20)
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "from the image hi\nDENIED PermissionError\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("motd.txt")).unwrap(),
        "from the image"
    );
    s.kill();
}

#[test]
fn an_unprivileged_user_runs_a_wasm_box_and_its_files_stay_theirs() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    require_python();
    let (uid, gid, _home) = common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("wasm-unpriv-bin");
    // CPython and its compiled form, where the user can read them (the build directory may
    // sit where the user cannot enter).
    let installed = airlock_wasm::WasmDir::locate(&airlock_bin());
    let dir = TempDir::new("wasm-unpriv-dir");
    let copy = airlock_wasm::WasmDir {
        root: dir.path().to_path_buf(),
    };
    std::fs::create_dir_all(copy.python().parent().unwrap()).unwrap();
    std::fs::copy(installed.python(), copy.python()).unwrap();
    std::fs::create_dir_all(copy.cache()).unwrap();
    // The cache holds the compiled module, its stamp and the unpacked standard library (a
    // directory tree).
    for e in std::fs::read_dir(installed.cache()).unwrap().flatten() {
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(e.path())
            .arg(copy.cache().join(e.file_name()))
            .status()
            .unwrap();
        assert!(status.success(), "cp -a {}", e.path().display());
    }
    std::process::Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()
        .unwrap();
    let t = TempDir::new("wasm-unpriv-ws");
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::chown(&ws, Some(uid), Some(gid)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            common::TEST_USER,
            "--regid",
            common::TEST_USER,
            "--init-groups",
            "--",
        ])
        .arg(&bin)
        .args([
            "run",
            "--backend",
            "wasm",
            "--no-stdin",
            "--",
            "python3",
            "-c",
        ])
        .arg(format!(
            "open({:?}, 'w').write('mine'); print('ok')",
            ws.join("made.txt").to_string_lossy()
        ))
        .env("AIRLOCK_WASM_DIR", dir.path())
        .current_dir(&ws)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{stderr}");
    let meta = std::fs::metadata(ws.join("made.txt")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (uid, gid));
}

#[test]
fn the_e2b_code_interpreter_sdk_works_with_a_wasm_server_and_refuses_what_needs_processes() {
    require_python();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("E2B_CLIENTS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/e2b-clients"))
        .join("py-current/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/e2b-clients.sh",
        python.display()
    );
    let data = TempDir::new("wasm-e2b");
    let serve = common::ServeProcess::start(data.path(), &["--backend", "wasm"]);
    let out = std::process::Command::new(&python)
        .arg(root.join("tests/e2b/wasm/check_wasm.py"))
        .env("E2B_API_KEY", serve.printed_e2b_key.as_deref().unwrap())
        .env("E2B_API_URL", &serve.base)
        .env("E2B_SANDBOX_URL", &serve.base)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("E2B_DOMAIN")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("wasm e2b: ok"),
        "{text}"
    );
    // Serving wasm with an internet default for E2B would be a promise no box keeps.
    let other = TempDir::new("wasm-e2b-net");
    let refused = std::process::Command::new(airlock_bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "wasm",
            "--e2b-network",
            "internet",
            "--data-dir",
        ])
        .arg(other.path())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a wasm box has no network"));
}

#[test]
fn mcp_run_code_keeps_state_in_a_wasm_box_and_run_command_is_refused_with_a_sentence() {
    require_python();
    let ws = TempDir::new("wasm-mcp");
    let note = ws.join("note.txt").to_string_lossy().into_owned();
    let steps = serde_json::json!([
        {"call": "run_code", "args": {"code": "x = 41"}},
        {"call": "run_code", "args": {"code": "import sys\nprint('x is', x, sys.platform)\nx + 1"}},
        {"call": "write_file", "args": {"path": note, "content": "from mcp"}},
        {"call": "run_code", "args": {"code": format!("open({note:?}).read().upper()")}},
        {"call": "run_command", "args": {"command": "ls"}},
    ]);
    let r = mcp_support::run_client(
        ws.path(),
        &steps,
        &mcp_support::stdio(&airlock_bin(), &["mcp", "--backend", "wasm"]),
    );
    assert!(!mcp_support::is_error(&r[0]), "{:?}", r[0]);
    let second = mcp_support::text(&r[1]);
    assert!(
        second.contains("x is 41 wasi") && second.contains("42"),
        "{second}"
    );
    assert!(!mcp_support::is_error(&r[2]), "{:?}", r[2]);
    assert!(mcp_support::text(&r[3]).contains("FROM MCP"), "{:?}", r[3]);
    assert!(
        mcp_support::is_error(&r[4]) && mcp_support::text(&r[4]).contains("no processes"),
        "{:?}",
        r[4]
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("note.txt")).unwrap(),
        "from mcp"
    );
}
