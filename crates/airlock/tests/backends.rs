//! Choosing the kind of box: one vocabulary (`--backend`, `backend =` in a policy file) on every
//! entry point; a kind this airlock does not have is refused before anything starts, with a
//! sentence saying so — never a stub that pretends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{airlock, TempDir};

#[test]
fn every_kind_is_built_and_runs_its_own_box_and_an_unknown_kind_is_refused_with_125() {
    let ws = TempDir::new("backend-refused");
    let marker = ws.join("ran");
    let script = format!("touch {}", marker.display());
    // wasm is built: it refuses what needs a process, with its own sentence, before running it.
    let r = airlock(
        ws.path(),
        &[
            "run",
            "--backend",
            "wasm",
            "--no-stdin",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(r.code, 126, "{}", r.stderr);
    assert!(
        r.stderr.contains("a wasm box has no processes"),
        "{}",
        r.stderr
    );
    let r = airlock(ws.path(), &["wrap", "--backend", "wasm", "--", "true"]);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("a wasm box has no processes"),
        "{}",
        r.stderr
    );
    assert!(!marker.exists(), "wasm: nothing ran");
    // microvm is built: `run` starts a VM (its own kernel), never a native box in its place.
    let r = airlock(
        ws.path(),
        &["run", "--backend", "microvm", "--", "uname", "-v"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let host = std::process::Command::new("uname")
        .arg("-v")
        .output()
        .unwrap();
    assert_ne!(
        r.stdout,
        String::from_utf8_lossy(&host.stdout),
        "ran on the host's kernel"
    );
    let r = airlock(ws.path(), &["receipt", "--backend", "microvm"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("microVM"), "{}", r.stdout);
    let r = airlock(ws.path(), &["run", "--backend", "docker", "--", "true"]);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("unknown backend \"docker\"")
            && r.stderr.contains("native, gvisor, microvm or wasm"),
        "{}",
        r.stderr
    );
}

#[test]
fn gvisor_is_built_runs_a_command_under_the_sentry_and_its_receipt_says_so() {
    let ws = TempDir::new("backend-gvisor");
    let r = airlock(
        ws.path(),
        &[
            "run",
            "--backend",
            "gvisor",
            "--",
            "sh",
            "-c",
            "id -u; uname -r; echo made > made",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], "1000", "{}", r.stdout);
    assert_ne!(
        lines[1],
        host_release.trim(),
        "uname must come from gVisor's kernel"
    );
    assert_eq!(std::fs::read_to_string(ws.join("made")).unwrap(), "made\n");
    // A change layer is the native supervisor's: asked for explicitly, gVisor refuses it.
    let r = airlock(
        ws.path(),
        &[
            "run",
            "--backend",
            "gvisor",
            "--changes",
            "apply",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("--changes direct"), "{}", r.stderr);
    let r = airlock(
        ws.path(),
        &["receipt", "--backend", "gvisor", "--net", "proxy"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("gVisor Sentry") && r.stdout.contains("egress proxy"),
        "{}",
        r.stdout
    );
    let r = airlock(
        ws.path(),
        &[
            "receipt",
            "--backend",
            "gvisor",
            "--runsc",
            "/nonexistent/runsc",
        ],
    );
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("--runsc PATH"), "{}", r.stderr);
}

#[test]
fn the_policy_file_names_the_backend_and_native_runs() {
    let ws = TempDir::new("backend-file");
    std::fs::write(ws.join("wasm.toml"), "backend = \"wasm\"\n").unwrap();
    std::fs::write(ws.join("native.toml"), "backend = \"native\"\n").unwrap();
    std::fs::write(ws.join("bad.toml"), "backend = \"vm\"\n").unwrap();
    let policy = |f: &str| ws.join(f).to_string_lossy().into_owned();
    let r = airlock(
        ws.path(),
        &["run", "--policy", &policy("wasm.toml"), "--", "true"],
    );
    // The file's wasm box ran it, and a wasm box has no processes to run `true` with.
    assert_eq!(r.code, 126, "{}", r.stderr);
    assert!(
        r.stderr.contains("a wasm box has no processes"),
        "{}",
        r.stderr
    );
    // The flag overrides the file.
    let r = airlock(
        ws.path(),
        &[
            "run",
            "--policy",
            &policy("wasm.toml"),
            "--backend",
            "native",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = airlock(
        ws.path(),
        &["run", "--policy", &policy("native.toml"), "--", "id", "-u"],
    );
    assert_eq!((r.code, r.stdout.trim()), (0, "1000"), "{}", r.stderr);
    let r = airlock(
        ws.path(),
        &["run", "--policy", &policy("bad.toml"), "--", "true"],
    );
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("unknown variant `vm`"), "{}", r.stderr);
}

#[test]
fn check_lists_every_backend_and_whether_it_can_run_here() {
    let ws = TempDir::new("backend-check");
    let r = airlock(ws.path(), &["check", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let list = v["backends"].as_array().unwrap();
    let status: Vec<(&str, &str)> = list
        .iter()
        .map(|b| {
            (
                b["backend"].as_str().unwrap(),
                b["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        status,
        vec![
            ("native", "available"),
            // Root with Debian's runsc and QEMU (scripts/test.sh installs them).
            ("gvisor", "available"),
            ("microvm", "available"),
            ("wasm", "available")
        ]
    );
    let r = airlock(ws.path(), &["check"]);
    // The platform airlock picks for the runsc it finds (AIRLOCK_RUNSC, as scripts/test.sh sets
    // it, else runsc on PATH): systrap where that runsc has it, else ptrace.
    let runsc =
        airlock_gvisor::Runsc::find(airlock_backends::gvisor_from_env().runsc.as_deref(), None)
            .unwrap();
    assert!(
        r.stdout.contains("native   available")
            && r.stdout.contains("gvisor   available (runsc version")
            && r.stdout.contains(&format!("platform {}", runsc.platform))
            && r.stdout.contains("microvm  available"),
        "{}",
        r.stdout
    );
}
