//! The escape hatches and the remaining limits: `--profile full-access`, `--net host`, `--cpus`,
//! and the rlimits every box gets.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run_json, run_sh, TempDir};
use std::io::Read;

#[test]
fn full_access_shows_the_host_but_keeps_limits_and_warns() {
    let ws = TempDir::new("full");
    let outside = TempDir::new("full-outside");
    std::fs::write(outside.join("host.txt"), "visible from the host\n").unwrap();
    let path = outside.join("host.txt");
    let r = run_sh(
        ws.path(),
        &["--profile", "full-access"],
        &format!("cat {}; id -u", path.display()),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("visible from the host"),
        "full-access sees host files: {}",
        r.stdout
    );
    assert!(
        r.stderr.contains("warning") && r.stderr.contains("full-access"),
        "a warning on stderr: {}",
        r.stderr
    );
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    assert_eq!(
        r.stdout.lines().last(),
        Some(uid.to_string().as_str()),
        "the caller's own uid"
    );
    // Limits and the timeout still apply.
    let (r, res) = run_json(
        ws.path(),
        &["--profile", "full-access", "--timeout", "1s"],
        "sleep 30",
    );
    assert_eq!(r.code, 124, "{}", r.stderr);
    assert!(res["limits_hit"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v == "timeout"));
    // Control: the same read in the default profile fails.
    let r = run_sh(ws.path(), &[], &format!("cat {}", path.display()));
    assert_ne!(r.code, 0);
    assert!(!r.stdout.contains("visible from the host"));
}

#[test]
fn net_host_reaches_a_host_listener_and_none_does_not() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let ws = TempDir::new("nethost");
    let script = format!("python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", {port}), timeout=3); s.sendall(b\"hi\"); print(\"connected\")'");
    let r = run_sh(ws.path(), &["--net", "host"], &script);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("connected"));
    let (mut conn, _) = listener
        .accept()
        .expect("the box connected with --net host");
    let mut buf = [0u8; 2];
    conn.set_nonblocking(false).unwrap();
    conn.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hi");
    // The default (none) cannot.
    let r = run_sh(ws.path(), &[], &script);
    assert_ne!(r.code, 0);
    assert!(
        listener.accept().is_err(),
        "no connection without --net host"
    );
}

#[test]
fn cpus_caps_cpu_time() {
    let ws = TempDir::new("cpus");
    // A busy loop for 2 s of wall time: without a cap it burns ~2 s of CPU, under 0.25 CPUs about
    // 0.5 s (the bound is generous: only the cap can keep it under 1 s).
    let spin = "python3 -c 'import time\nt=time.time()\nwhile time.time()-t<2: pass'";
    let (r, res) = run_json(ws.path(), &["--cpus", "0.25"], spin);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cpu = res["cpu_user_ms"].as_f64().unwrap() + res["cpu_system_ms"].as_f64().unwrap();
    assert!(cpu < 1000.0, "a 0.25-CPU box used {cpu} ms of CPU in 2 s");
    let layer = res["receipt"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "cpu")
        .unwrap()
        .clone();
    assert_eq!(layer["status"], "enforced", "{layer}");
    // Control: uncapped, the same loop uses well over 1 s of CPU.
    let (_, res) = run_json(ws.path(), &[], spin);
    let cpu = res["cpu_user_ms"].as_f64().unwrap() + res["cpu_system_ms"].as_f64().unwrap();
    assert!(cpu > 1200.0, "the uncapped loop used only {cpu} ms");
}

#[test]
fn rlimits_core_open_files_and_file_size() {
    let ws = TempDir::new("rlimits");
    let r = run_sh(
        ws.path(),
        &["--disk", "8M"],
        "echo core=$(ulimit -c) nofile=$(ulimit -n) fsize=$(ulimit -f)",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // ulimit -f is in 512-byte blocks: 8 MiB = 16384.
    assert_eq!(
        r.stdout.trim(),
        "core=0 nofile=4096 fsize=16384",
        "{}",
        r.stdout
    );
    // A file larger than the cap cannot be written even in the workspace (host disk).
    let r = run_sh(
        ws.path(),
        &["--disk", "8M"],
        "head -c 9000000 /dev/zero > big.bin; echo rc=$?",
    );
    assert!(!r.stdout.contains("rc=0"), "{}", r.stdout);
    let len = std::fs::metadata(ws.join("big.bin"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(len <= 8 << 20, "the file grew to {len} bytes");
}
