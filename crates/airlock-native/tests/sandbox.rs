//! Long-lived sandboxes end to end: a real box whose init is the agent, driven through the
//! `Sandbox` handle. Runs as a plain single-threaded program (see Cargo.toml).
#![allow(clippy::unwrap_used)]

use airlock_native::{Sandbox, SandboxOptions};
use airlock_policy::{resolve, PolicyFile, ResolveContext};
use airlock_runtime::RealHost;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp(tag: &str) -> Dir {
    let p = std::env::temp_dir().join(format!("airlock-sbx-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    Dir(p)
}

fn sandbox(ws: &Path) -> Sandbox {
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
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
    Sandbox::create(&policy, &SandboxOptions::default()).unwrap()
}

fn sh(s: &mut Sandbox, script: &str) -> (String, Option<i32>) {
    let out = s
        .channel()
        .unwrap()
        .exec(
            &["sh", "-c", script],
            &[],
            None,
            Some(Duration::from_secs(30)),
            1 << 20,
        )
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.exit_code,
    )
}

fn state_persists_across_calls() {
    let ws = temp("state");
    let mut s = sandbox(&ws.0);
    assert_eq!(
        sh(
            &mut s,
            "echo turn-one > notes.txt; mkdir -p /tmp/work; echo scratch > /tmp/work/x"
        ),
        (String::new(), Some(0))
    );
    let (out, code) = sh(&mut s, "cat notes.txt /tmp/work/x");
    assert_eq!((out.as_str(), code), ("turn-one\nscratch\n", Some(0)));
    // Workspace files land on the host; box scratch (/tmp) does not.
    assert_eq!(
        std::fs::read_to_string(ws.0.join("notes.txt")).unwrap(),
        "turn-one\n"
    );
    s.close();
}

fn exec_io_exit_codes_and_timeouts() {
    let ws = temp("exec");
    let mut s = sandbox(&ws.0);
    let out = s
        .channel()
        .unwrap()
        .exec(&["cat"], &[], Some(b"from stdin"), None, 1 << 20)
        .unwrap();
    assert_eq!(out.stdout, b"from stdin");
    let out = s
        .channel()
        .unwrap()
        .exec(
            &["sh", "-c", "echo err >&2; exit 7"],
            &[],
            None,
            None,
            1 << 20,
        )
        .unwrap();
    assert_eq!(
        (out.stderr.as_slice(), out.exit_code),
        (&b"err\n"[..], Some(7))
    );
    let out = s
        .channel()
        .unwrap()
        .exec(
            &["sh", "-c", "echo $GREETING"],
            &[("GREETING", "hi")],
            None,
            None,
            1 << 20,
        )
        .unwrap();
    assert_eq!(out.stdout, b"hi\n");
    let out = s
        .channel()
        .unwrap()
        .exec(
            &["sleep", "30"],
            &[],
            None,
            Some(Duration::from_millis(300)),
            1 << 20,
        )
        .unwrap();
    assert!(
        out.timed_out && out.signal == Some(libc::SIGKILL),
        "{out:?}"
    );
    let out = s
        .channel()
        .unwrap()
        .exec(
            &["sh", "-c", "head -c 3000000 /dev/zero"],
            &[],
            None,
            None,
            1000,
        )
        .unwrap();
    assert_eq!(out.stdout.len(), 1000, "output capped");
    assert_eq!(out.exit_code, Some(0));
    s.close();
}

fn files_round_trip() {
    let ws = temp("files");
    let mut s = sandbox(&ws.0);
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let path = ws.0.join("blob.bin");
    s.write_file(path.to_str().unwrap(), &data).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        data,
        "written through the agent, visible on the host"
    );
    assert_eq!(s.read_file(path.to_str().unwrap()).unwrap(), data);
    let (out, _) = sh(&mut s, "wc -c < blob.bin");
    assert_eq!(out.trim(), "3000000");
    s.close();
}

fn the_box_still_holds() {
    let ws = temp("holds");
    let secret = temp("holds-secret");
    std::fs::write(secret.0.join("key"), "hunter2").unwrap();
    let mut s = sandbox(&ws.0);
    let (out, _) = sh(
        &mut s,
        "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; id -u",
    );
    assert!(
        out.contains("CapEff:\t0000000000000000")
            && out.contains("NoNewPrivs:\t1")
            && out.contains("Seccomp:\t2"),
        "{out}"
    );
    assert!(out.ends_with("1000\n"), "{out}");
    let key = secret.0.join("key");
    let (out, code) = sh(&mut s, &format!("cat {}", key.display()));
    assert!(
        !out.contains("hunter2") && code != Some(0),
        "the box read a host file: {out}"
    );
    // The agent's own file operations are confined the same way.
    assert!(
        s.read_file(key.to_str().unwrap()).is_err(),
        "the agent read a host file"
    );
    assert!(
        s.write_file("/usr/airlock-sbx-test", b"x").is_err(),
        "the agent wrote a read-only path"
    );
    assert!(!Path::new("/usr/airlock-sbx-test").exists());
    s.close();
    assert_eq!(std::fs::read_to_string(&key).unwrap(), "hunter2");
}

fn close_leaves_nothing_behind() {
    let ws = temp("close");
    let marker = format!("1000.{}7", std::process::id());
    let mut s = sandbox(&ws.0);
    let (_, code) = sh(
        &mut s,
        &format!("setsid sleep {marker} > /dev/null 2>&1 & echo started"),
    );
    assert_eq!(code, Some(0));
    let running = |m: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(m))
                .unwrap_or(false)
        })
    };
    // `sh` may answer before its background child has exec'd `sleep`: give it a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !running(&marker) {
        assert!(
            std::time::Instant::now() < deadline,
            "the background process runs between calls"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.close();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(&marker) {
        assert!(
            std::time::Instant::now() < deadline,
            "a box process outlived close()"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<_> = std::fs::read_dir(&ws.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "placeholders or files left in the workspace: {left:?}"
    );
}

fn main() {
    let tests: &[(&str, fn())] = &[
        ("state_persists_across_calls", state_persists_across_calls),
        (
            "exec_io_exit_codes_and_timeouts",
            exec_io_exit_codes_and_timeouts,
        ),
        ("files_round_trip", files_round_trip),
        ("the_box_still_holds", the_box_still_holds),
        ("close_leaves_nothing_behind", close_leaves_nothing_behind),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    // The same closing line as the standard harness, so scripts that count tests see these too.
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "test result: {verdict}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out",
        tests.len() - failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
