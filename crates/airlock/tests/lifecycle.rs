//! Pause in place: the native box's cgroup freezer stops every process of the box (CPU given
//! back at once, memory resident) and resumes it in milliseconds; every backend's pause, cycle
//! after cycle, leaves nothing behind (the cycles test runs against `AIRLOCK_TEST_BACKEND`:
//! runsc's pause under gVisor, QEMU's stop under the microVM). (Server-level pause, snapshots,
//! fork and restart: tests/pause.rs.)
#![allow(clippy::unwrap_used)]

mod common;

use airlock_policy::{resolve, BackendKind, PolicyFile, ResolveContext};
use airlock_runtime::backend::{StartOptions, Template};
use airlock_runtime::{LiveSandbox, RealHost};
use common::TempDir;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn native_box(ws: &std::path::Path) -> LiveSandbox {
    kind_box(ws, BackendKind::Native)
}

fn kind_box(ws: &std::path::Path, kind: BackendKind) -> LiveSandbox {
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(kind),
        ..Default::default()
    };
    let policy = resolve(
        &file,
        &ResolveContext {
            cwd: ws.to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap();
    let backend =
        airlock_backends::built_in(&airlock_backends::BackendConfig::new(common::airlock_bin()))
            .select(kind)
            .unwrap();
    LiveSandbox::start(
        backend.as_ref(),
        &policy,
        &Template::Host,
        &StartOptions::default(),
    )
    .unwrap()
}

fn sh(s: &mut LiveSandbox, script: &str) -> String {
    let out = s
        .channel()
        .exec(&["sh", "-c", script], &[], None, None, 1 << 20)
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{script}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The tests count this process's descriptors: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn counter(ws: &std::path::Path) -> u64 {
    std::fs::read_to_string(ws.join("count"))
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn a_frozen_native_box_stops_in_place_and_resumes_in_milliseconds_with_its_memory() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ws = TempDir::new("life-freeze");
    let mut s = native_box(ws.path());
    assert!(
        s.capabilities().pause,
        "the native box has the cgroup freezer"
    );
    // A shell holding a variable in memory counts up into the workspace, and a 64 MiB
    // buffer sits in a process's memory.
    let marker = format!("life-freeze-{}", std::process::id());
    sh(
        &mut s,
        &format!(
            "(n=0; while :; do n=$((n+1)); echo $n > count; done) >/dev/null 2>&1 & \
             python3 -c 'import time; b = bytearray(b\"x\" * (64 << 20)); time.sleep(3600)' {marker} \
             >/dev/null 2>&1 &"
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while counter(ws.path()) < 100 {
        assert!(Instant::now() < deadline, "the counter never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The buffer is in memory before the freeze (Python may still be starting on a loaded
    // machine when the counter is already past 100).
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.usage().unwrap().memory_bytes.unwrap_or(0) < 64 << 20 {
        assert!(
            Instant::now() < deadline,
            "the 64 MiB buffer never became resident: {:?}",
            s.usage()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = s.usage().unwrap();
    s.pause().unwrap();
    let frozen_at = counter(ws.path());
    let cpu_frozen = s.usage().unwrap().cpu_usec;
    // Without a CPU figure the check below would compare nothing with nothing.
    assert!(cpu_frozen.is_some(), "a native box reports its CPU time");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(counter(ws.path()), frozen_at, "a frozen box kept running");
    let during = s.usage().unwrap();
    assert_eq!(during.cpu_usec, cpu_frozen, "a frozen box used CPU");
    // Memory stays resident (the freezer gives CPU back, not memory).
    assert!(
        during.memory_bytes.unwrap_or(0) >= 64 << 20,
        "{during:?} (before: {before:?})"
    );
    let holder = common::pids_with_marker(&marker);
    assert!(!holder.is_empty(), "the buffer's process runs");
    let t0 = Instant::now();
    s.resume().unwrap();
    let resumed = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(5);
    while counter(ws.path()) <= frozen_at {
        assert!(Instant::now() < deadline, "the box did not continue");
        std::thread::sleep(Duration::from_millis(2));
    }
    // The box's memory was kept: the same process holds its buffer.
    assert_eq!(common::pids_with_marker(&marker), holder);
    eprintln!("native resume (thaw) took {resumed:?}");
    // Milliseconds, not a restore (the ≤ 5 ms figure is measured in benches/lifecycle.sh, on
    // a quiet machine; a loaded one is slower).
    assert!(
        resumed < Duration::from_millis(100),
        "resume took {resumed:?}"
    );
    s.kill();
    assert!(common::pids_with_marker(&marker).is_empty());
}

#[test]
fn a_hundred_pause_and_resume_cycles_leak_nothing() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ws = TempDir::new("life-cycles");
    let kind = common::test_backend_kind();
    // A native box's host is cloned from this program's host zygote, which the first box
    // starts and which is kept for the program's life (one descriptor here): a box made and
    // ended before the counts, so that they see only what the box under test leaves. Without
    // it this test failed whenever it ran before the other one.
    kind_box(ws.path(), kind).kill();
    let fds = open_fds();
    let mounts = common::host_mounts().lines().count();
    let cgroups = common::leftover_cgroups();
    let mut s = kind_box(ws.path(), kind);
    assert!(s.capabilities().pause, "{kind} boxes pause in place");
    sh(&mut s, "echo 0 > n");
    // The box's memory settles after its first command (caches, the agent's buffers).
    sh(&mut s, "true");
    let memory = s.usage().unwrap().memory_bytes;
    for i in 0..100 {
        s.pause().unwrap();
        s.resume().unwrap();
        if i % 10 == 0 {
            // The box works between cycles, and its state carries on.
            sh(&mut s, "echo $(( $(cat n) + 1 )) > n");
        }
    }
    assert_eq!(sh(&mut s, "cat n").trim(), "10");
    let usage = s.usage().unwrap();
    if let Some(procs) = usage.processes {
        assert!(procs <= 2, "{procs} processes in the box after the cycles");
    }
    // Memory: the box's own (its cgroup, runsc's sandbox, or the VM's QEMU), no growth beyond
    // noise across the cycles. Under the microVM (TCG here) QEMU's translation cache also fills
    // as the box runs new commands, up to its cap, whatever the pauses: that much more.
    let allowed = match kind {
        BackendKind::Microvm => (u64::from(airlock_microvm::TCG_TRANSLATION_MIB) + 16) << 20,
        _ => 16 << 20,
    };
    if let (Some(before), Some(after)) = (memory, usage.memory_bytes) {
        eprintln!("{kind} box memory: {before} bytes before the cycles, {after} after");
        assert!(
            after <= before + allowed,
            "the box's memory grew from {before} to {after} bytes over 100 cycles"
        );
    }
    s.kill();
    // Nothing of the box is left on the host: no process names its workspace (a microVM's
    // QEMU shares it by path).
    let marker = ws.path().display().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !common::pids_with_marker(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_with_marker(&marker).is_empty(),
        "processes of the box outlived it"
    );
    // The box's descriptors close as its host ends, which a loaded machine may take a moment
    // to see through.
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_fds() != fds && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(open_fds(), fds, "descriptors leaked");
    assert_eq!(
        common::host_mounts().lines().count(),
        mounts,
        "mounts leaked"
    );
    let new_cgroups: Vec<_> = common::leftover_cgroups()
        .into_iter()
        .filter(|c| !cgroups.contains(c))
        .collect();
    assert!(new_cgroups.is_empty(), "cgroups leaked: {new_cgroups:?}");
    let left: Vec<_> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("n")], "stray files");
}
