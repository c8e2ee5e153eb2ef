//! Choosing the kind of box: one vocabulary (`--backend`, `backend =` in a policy file) on every
//! entry point; a kind this airlock does not have is refused before anything starts, with a
//! sentence saying so — never a stub that pretends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{airlock, TempDir};

#[test]
fn a_backend_that_is_not_built_is_refused_on_every_command_with_exit_125() {
    let ws = TempDir::new("backend-refused");
    let marker = ws.join("ran");
    let script = format!("touch {}", marker.display());
    for kind in ["gvisor", "wasm"] {
        let r = airlock(
            ws.path(),
            &["run", "--backend", kind, "--", "sh", "-c", &script],
        );
        assert_eq!(r.code, 125, "{kind}: {}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("the {kind} backend is not built yet")),
            "{kind}: {}",
            r.stderr
        );
        assert!(!marker.exists(), "{kind}: nothing ran");
        for sub in [&["receipt"][..], &["mcp"], &["wrap", "--", "true"]] {
            let mut args = vec![sub[0], "--backend", kind];
            args.extend_from_slice(&sub[1..]);
            let r = airlock(ws.path(), &args);
            assert_eq!(r.code, 125, "{args:?}: {}", r.stderr);
            assert!(r.stderr.contains("not built yet"), "{args:?}: {}", r.stderr);
        }
    }
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
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("wasm backend is not built yet"),
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
            ("gvisor", "not-built"),
            ("microvm", "available"),
            ("wasm", "not-built")
        ]
    );
    let r = airlock(ws.path(), &["check"]);
    assert!(
        r.stdout.contains("native   available") && r.stdout.contains("gvisor   not built yet"),
        "{}",
        r.stdout
    );
}
