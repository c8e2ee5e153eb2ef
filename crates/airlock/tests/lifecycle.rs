//! End-to-end lifecycle tests through the real `airlock` binary: what a user sees (files, exit
//! codes, JSON, terminal, signals), and that every way a run can end, including airlock itself
//! being SIGKILLed, leaves the host as it was: no process, no cgroup, no mount, no placeholder.
//!
//! Each test uses its own directories and unique markers, so they run in parallel with each other
//! and with other test binaries.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A number unique to this test process and call, usable as the fraction of `sleep`'s argument
/// (`sleep 1000.<marker>`), so a process started by a test can be found in /proc.
fn marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}{:04}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn to_run(out: Output) -> Run {
    use std::os::unix::process::ExitStatusExt;
    Run {
        code: out
            .status
            .code()
            .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0)),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Starts `airlock <args>` in `cwd` with piped stdout/stderr.
fn spawn_airlock(cwd: &Path, args: &[&str], stdin: Stdio) -> Child {
    Command::new(airlock_bin())
        .args(args)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn airlock")
}

/// Runs `airlock run <flags> -- sh -c <script>` and also returns airlock's pid (which names its
/// cgroups, `airlock-<pid>-<n>`).
fn run_tracked(cwd: &Path, flags: &[&str], script: &str) -> (Run, u32) {
    let mut args: Vec<&str> = vec!["run"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    run_args_tracked(cwd, &args)
}

fn run_args_tracked(cwd: &Path, args: &[&str]) -> (Run, u32) {
    let child = spawn_airlock(cwd, args, Stdio::null());
    let pid = child.id();
    (
        to_run(child.wait_with_output().expect("wait for airlock")),
        pid,
    )
}

/// Polls `check` until it succeeds or `timeout` passes; then panics with its last complaint.
fn eventually(timeout: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let end = Instant::now() + timeout;
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if Instant::now() >= end => panic!("{e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn cmdline(pid: i32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

/// Entries of /tmp named `airlock*` that are not test directories (`airlock-test-*`).
fn tmp_airlock_entries() -> BTreeSet<String> {
    std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("airlock") && !n.starts_with("airlock-test-"))
        .collect()
}

/// Every path below `dir`, relative, directories included.
fn tree(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            out.insert(
                p.strip_prefix(base)
                    .expect("path below base")
                    .to_string_lossy()
                    .into_owned(),
            );
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(base, &p, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The host state a run must not change.
struct HostSnapshot {
    mounts: String,
    tmp: BTreeSet<String>,
}

impl HostSnapshot {
    fn take() -> HostSnapshot {
        HostSnapshot {
            mounts: host_mounts(),
            tmp: tmp_airlock_entries(),
        }
    }

    /// Within 5 s: no process whose command line has one of `markers`, no cgroup of airlock
    /// process `airlock_pid`, the host mount table as before, no new /tmp/airlock* entry.
    fn assert_clean(&self, airlock_pid: u32, markers: &[&str]) {
        let prefix = format!("airlock-{airlock_pid}-");
        eventually(Duration::from_secs(5), || {
            for m in markers {
                let pids = pids_with_marker(m);
                if !pids.is_empty() {
                    let cmds: Vec<String> = pids
                        .iter()
                        .map(|p| format!("{p}: {}", cmdline(*p)))
                        .collect();
                    return Err(format!("processes with marker {m} remain: {cmds:?}"));
                }
            }
            let cgs: Vec<_> = leftover_cgroups()
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().starts_with(&prefix))
                        .unwrap_or(false)
                })
                .collect();
            if !cgs.is_empty() {
                return Err(format!(
                    "cgroup directories of airlock {airlock_pid} remain: {cgs:?}"
                ));
            }
            let now = host_mounts();
            if now != self.mounts {
                let before: BTreeSet<&str> = self.mounts.lines().collect();
                let after: BTreeSet<&str> = now.lines().collect();
                return Err(format!(
                    "host mount table changed: added {:?}, removed {:?}",
                    after.difference(&before).collect::<Vec<_>>(),
                    before.difference(&after).collect::<Vec<_>>()
                ));
            }
            let new: Vec<String> = tmp_airlock_entries()
                .difference(&self.tmp)
                .cloned()
                .collect();
            if !new.is_empty() {
                return Err(format!("new /tmp entries named airlock*: {new:?}"));
            }
            Ok(())
        });
    }
}

/// Reads a child's stdout line by line on a thread.
struct LineReader {
    rx: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl LineReader {
    fn new(child: &mut Child) -> LineReader {
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        LineReader {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits until a line equal to `want` has been read.
    fn wait_for(&mut self, want: &str, timeout: Duration) {
        let end = Instant::now() + timeout;
        while !self.seen.iter().any(|l| l == want) {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!(
                    "no {want:?} line on airlock's stdout within {timeout:?}; got {:?}",
                    self.seen
                ),
            }
        }
    }

    /// Everything read, up to EOF (or 10 s).
    fn rest(mut self) -> Vec<String> {
        while let Ok(l) = self.rx.recv_timeout(Duration::from_secs(10)) {
            self.seen.push(l);
        }
        self.seen
    }
}

fn send_signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill with integer arguments, to the airlock child this test started.
    let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill({pid}, {sig}) failed");
}

fn wait_code(child: &mut Child) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let st = child.wait().expect("wait for airlock");
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

fn read_stderr(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut s);
    }
    s
}

const ALL_LAYERS: &[&str] = &[
    "filesystem",
    "process",
    "seccomp",
    "landlock",
    "network",
    "memory",
    "pids",
    "cpu",
    "disk",
    "time",
    "output",
    "env",
];

// ---------------------------------------------------------------------------------------------
// Positive cases
// ---------------------------------------------------------------------------------------------

#[test]
fn workspace_writes_land_on_host_owned_by_invoking_user() {
    let ws = TempDir::new("lc-owner");
    let r = run_sh(ws.path(), &[], "set -e; echo hello > a.txt; mkdir -p sub/dir; printf 'x%.0s' $(seq 1000) > sub/dir/b.bin; echo ok");
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read(ws.join("sub/dir/b.bin")).unwrap(),
        vec![b'x'; 1000]
    );
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    // SAFETY: getegid cannot fail.
    let my_gid = unsafe { libc::getegid() };
    for rel in ["a.txt", "sub", "sub/dir", "sub/dir/b.bin"] {
        let md = std::fs::metadata(ws.join(rel)).unwrap();
        assert_eq!(md.uid(), me, "{rel} is not owned by the invoking user");
        assert_eq!(
            md.gid(),
            my_gid,
            "{rel} does not have the invoking user's group"
        );
    }
    assert_eq!(
        tree(ws.path()),
        set(&["a.txt", "sub", "sub/dir", "sub/dir/b.bin"]),
        "placeholders or stray files left"
    );
}

#[test]
fn python_and_sh_work_inside() {
    let ws = TempDir::new("lc-python");
    let py = r#"
import json, sqlite3, ssl, subprocess
out = subprocess.run(["sh", "-c", "echo from-sub"], capture_output=True, text=True, check=True).stdout.strip()
db = sqlite3.connect("data.db")
db.execute("create table t (x)")
db.execute("insert into t values (42)")
db.commit()
ctx = ssl.create_default_context()
print(json.dumps({"sub": out, "row": db.execute("select x from t").fetchone()[0], "tls": ctx.minimum_version is not None}))
"#;
    let r = run_sh(
        ws.path(),
        &[],
        &format!("python3 -c '{py}' && echo SH-$((6*7))"),
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let mut lines = r.stdout.lines();
    let doc: serde_json::Value =
        serde_json::from_str(lines.next().unwrap_or("")).expect("python printed JSON");
    assert_eq!(doc["sub"], "from-sub");
    assert_eq!(doc["row"], 42);
    assert_eq!(doc["tls"], true);
    assert_eq!(lines.next(), Some("SH-42"));
    assert!(
        ws.join("data.db").is_file(),
        "sqlite database written inside did not land in the workspace"
    );
}

fn host_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git on the host");
    assert!(
        out.status.success(),
        "host git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_works_on_an_existing_repo() {
    let ws = TempDir::new("lc-git");
    host_git(ws.path(), &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    host_git(ws.path(), &["add", "a.txt"]);
    host_git(ws.path(), &["commit", "-q", "-m", "first"]);
    std::fs::write(ws.join("b.txt"), "new file\n").unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let script = r#"set -e
echo "== status"; git status --porcelain
echo "== log"; git log --format=%s
echo "== diff"; git diff
git add a.txt b.txt
git -c user.email=a@b -c user.name=a commit -q -m second
echo "== log2"; git log --format=%s
echo three >> a.txt
echo "== diff2"; git diff --stat
"#;
    let r = run_sh(ws.path(), &[], script);
    assert_eq!(
        r.code, 0,
        "git failed inside the box\nstdout: {}\nstderr: {}",
        r.stdout, r.stderr
    );
    let section = |name: &str| -> String {
        let start = r
            .stdout
            .find(&format!("== {name}\n"))
            .unwrap_or_else(|| panic!("no section {name}: {}", r.stdout))
            + name.len()
            + 4;
        let end = r.stdout[start..]
            .find("== ")
            .map(|i| start + i)
            .unwrap_or(r.stdout.len());
        r.stdout[start..end].to_string()
    };
    let status = section("status");
    assert!(
        status.contains(" M a.txt"),
        "git status does not show the modification: {status}"
    );
    assert!(
        status.contains("?? b.txt"),
        "git status does not show the new file: {status}"
    );
    assert_eq!(section("log").trim(), "first");
    assert!(
        section("diff").contains("+two"),
        "git diff: {}",
        section("diff")
    );
    assert_eq!(section("log2").trim(), "second\nfirst");
    assert!(
        section("diff2").contains("a.txt | 1 +"),
        "git diff --stat: {}",
        section("diff2")
    );
    // The commit made inside is in the host's repository, and the repository is sound.
    assert_eq!(
        host_git(ws.path(), &["log", "--format=%s"]).trim(),
        "second\nfirst"
    );
    assert_eq!(host_git(ws.path(), &["show", "HEAD:b.txt"]), "new file\n");
    host_git(ws.path(), &["fsck", "--no-progress"]);
    // No placeholder survives the run.
    assert_eq!(
        host_git(ws.path(), &["status", "--porcelain"]).trim(),
        "M a.txt"
    );
}

/// Placeholders for missing protected files (`.bashrc`, `.mcp.json`, ...) exist in the workspace
/// during the run; `git add -A` + commit inside must not put them into the user's repository.
#[test]
fn git_add_all_does_not_commit_placeholders() {
    let ws = TempDir::new("lc-git-addall");
    host_git(ws.path(), &["init", "-q"]);
    host_git(ws.path(), &["commit", "-q", "--allow-empty", "-m", "first"]);
    let script = "set -e; echo a > a.txt; mkdir src; echo b > src/.bashrc; echo \"== status\"; git status --porcelain; \
        git add -A; git -c user.email=a@b -c user.name=a commit -q -m second; echo \"== files\"; git show --name-only --format= HEAD";
    let r = run_sh(ws.path(), &[], script);
    assert_eq!(r.code, 0, "stdout {} stderr {}", r.stdout, r.stderr);
    let files = r.stdout.split("== files\n").nth(1).unwrap_or("");
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        vec!["a.txt", "src/.bashrc"],
        "commit made inside: {}",
        r.stdout
    );
    let status = r
        .stdout
        .split("== status\n")
        .nth(1)
        .unwrap_or("")
        .split("== files")
        .next()
        .unwrap_or("");
    assert_eq!(
        status.lines().collect::<Vec<_>>(),
        vec!["?? a.txt", "?? src/"],
        "git status inside shows placeholders: {}",
        r.stdout
    );
    // On the host: the commit holds only what the box wrote, and the tree is clean.
    assert_eq!(
        host_git(ws.path(), &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "a.txt\nsrc/.bashrc"
    );
    assert_eq!(host_git(ws.path(), &["status", "--porcelain"]).trim(), "");
}

#[test]
fn exit_codes_propagate() {
    let ws = TempDir::new("lc-codes");
    let cases: &[(&str, i32)] = &[
        ("exit 7", 7),
        ("exit 0", 0),
        ("kill -TERM $$", 143),
        ("kill -KILL $$", 137),
    ];
    for (script, want) in cases {
        let r = run_sh(ws.path(), &[], script);
        assert_eq!(r.code, *want, "{script}: stderr {}", r.stderr);
    }
    let r = airlock(ws.path(), &["run", "--", "no-such-command-lifecycle"]);
    assert_eq!(r.code, 127, "command not found: {}", r.stderr);
    assert!(
        r.stderr.contains("no-such-command-lifecycle"),
        "message does not name the command: {}",
        r.stderr
    );

    let tools = TempDir::new("lc-codes-tools");
    let noexec = tools.join("not-executable");
    std::fs::write(&noexec, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = noexec.to_string_lossy().into_owned();
    let r = airlock(ws.path(), &["run", "--read", &p, "--", &p]);
    assert_eq!(
        r.code, 126,
        "not executable: stdout {} stderr {}",
        r.stdout, r.stderr
    );
    assert!(!r.stdout.contains("ran"));

    let r = airlock(ws.path(), &["run", "--no-such-flag", "--", "true"]);
    assert_eq!(r.code, 125, "bad flag");
    assert!(
        r.stderr.contains("--no-such-flag"),
        "bad flag message: {}",
        r.stderr
    );

    let pol = tools.join("bad.toml");
    std::fs::write(&pol, "[limits]\nmemory = \"1G\"\nbogus_limit_key = 3\n").unwrap();
    let r = airlock(
        ws.path(),
        &["run", "--policy", &pol.to_string_lossy(), "--", "true"],
    );
    assert_eq!(r.code, 125, "unknown policy key");
    assert!(
        r.stderr.contains("bogus_limit_key"),
        "policy error does not name the key: {}",
        r.stderr
    );

    let r = airlock(ws.path(), &["run", "--workspace", "/", "--", "true"]);
    assert_eq!(r.code, 125, "--workspace / must be refused");
    assert!(r.stderr.contains("--workspace"), "message: {}", r.stderr);

    let r = airlock(ws.path(), &["run", "--memory", "lots", "--", "true"]);
    assert_eq!(r.code, 125, "bad size");
    assert!(r.stderr.contains("--memory"), "message: {}", r.stderr);
    assert!(
        tree(ws.path()).is_empty(),
        "workspace not empty: {:?}",
        tree(ws.path())
    );
}

fn check_result_doc(doc: &serde_json::Value, want_code: i64) {
    assert_eq!(doc["exit_code"], want_code, "{doc}");
    for key in [
        "exit_code",
        "signal",
        "wall_ms",
        "cpu_user_ms",
        "peak_memory_bytes",
        "limits_hit",
        "receipt",
        "events",
    ] {
        assert!(doc.get(key).is_some(), "result has no {key}: {doc}");
    }
    assert!(
        doc["wall_ms"].as_f64().is_some_and(|v| v > 0.0),
        "wall_ms: {doc}"
    );
    assert!(doc["cpu_user_ms"].as_f64().is_some());
    assert!(
        doc["peak_memory_bytes"].as_u64().is_some_and(|v| v > 0),
        "no peak memory: {doc}"
    );
    assert!(doc["limits_hit"].is_array());
    let layers: Vec<&str> = doc["receipt"]["layers"]
        .as_array()
        .expect("receipt.layers")
        .iter()
        .map(|l| l["layer"].as_str().expect("layer name"))
        .collect();
    for want in ALL_LAYERS {
        assert!(
            layers.contains(want),
            "layer {want} missing from {layers:?}"
        );
    }
    let events: Vec<&str> = doc["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("event kind"))
        .collect();
    assert!(
        events.contains(&"start") && events.contains(&"exit"),
        "events: {events:?}"
    );
}

#[test]
fn json_result_on_stderr_and_in_file() {
    let ws = TempDir::new("lc-json");
    let r = run_sh(
        ws.path(),
        &["--json"],
        "echo out; python3 -c 'sum(range(2000000))'; exit 5",
    );
    assert_eq!(r.code, 5);
    assert_eq!(r.stdout, "out\n", "the JSON document must not go to stdout");
    let doc: serde_json::Value = serde_json::from_str(r.stderr.trim())
        .unwrap_or_else(|e| panic!("stderr is not the JSON doc ({e}): {}", r.stderr));
    check_result_doc(&doc, 5);
    assert_eq!(doc["signal"], serde_json::Value::Null);
    assert!(
        doc["cpu_user_ms"].as_f64().unwrap() > 0.0,
        "python's CPU time not counted: {doc}"
    );

    let (r, doc) = run_json(ws.path(), &["--timeout", "1s"], "echo out; kill -TERM $$");
    assert_eq!(r.code, 143);
    assert_eq!(r.stdout, "out\n");
    assert!(
        !r.stderr.contains("\"exit_code\""),
        "--result must not also print on stderr: {}",
        r.stderr
    );
    check_result_doc(&doc, 143);
    assert_eq!(doc["signal"], libc::SIGTERM);
    assert_eq!(doc["limits_hit"], serde_json::json!([]));

    let (r, doc) = run_json(ws.path(), &["--timeout", "1s"], "sleep 30");
    assert_eq!(r.code, 124);
    check_result_doc(&doc, 124);
    assert!(
        doc["limits_hit"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "timeout"),
        "{doc}"
    );
}

#[test]
fn receipt_and_check() {
    let ws = TempDir::new("lc-receipt");
    let r = airlock(ws.path(), &["receipt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for layer in ALL_LAYERS {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(layer)),
            "receipt lacks {layer}:\n{}",
            r.stdout
        );
    }
    let r = airlock(
        ws.path(),
        &["receipt", "--json", "--memory", "256M", "--", "echo", "hi"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("receipt --json parses");
    let layers = doc["receipt"]["layers"].as_array().expect("layers");
    for want in ALL_LAYERS {
        assert!(
            layers.iter().any(|l| l["layer"] == *want),
            "layer {want} missing"
        );
    }
    let mem = layers.iter().find(|l| l["layer"] == "memory").unwrap();
    assert!(
        mem["detail"].as_str().unwrap().contains("256 MiB"),
        "memory detail: {mem}"
    );
    assert!(
        tree(ws.path()).is_empty(),
        "receipt must not touch the workspace"
    );

    let r = airlock(ws.path(), &["check"]);
    assert_eq!(r.code, 0, "check failed: {}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("ok"), "{}", r.stdout);
    for layer in ALL_LAYERS {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(layer)),
            "check lacks {layer}:\n{}",
            r.stdout
        );
    }
    let r = airlock(ws.path(), &["check", "--json"]);
    assert_eq!(r.code, 0);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("check --json parses");
    assert_eq!(doc["can_run"], true, "{doc}");
}

#[test]
fn policy_file_sets_limits_and_flags_override() {
    let ws = TempDir::new("lc-policy");
    let cfg = TempDir::new("lc-policy-cfg");
    let pol = cfg.join("policy.toml");
    std::fs::write(
        &pol,
        "[limits]\npids = 5\ntimeout = \"20s\"\n[env]\nset = { FROM_POLICY = \"yes\" }\n",
    )
    .unwrap();
    let pol = pol.to_string_lossy().into_owned();
    let fork20 = "n=0; for i in $(seq 20); do sleep 1 & n=$((n+1)); done; echo STARTED=$n; echo FROM_POLICY=$FROM_POLICY";

    // The file alone: 5 processes are not enough for 20 sleeps.
    let r = run_sh(ws.path(), &["--policy", &pol], fork20);
    assert_ne!(
        r.code, 0,
        "pids = 5 from the policy file was not applied: {}",
        r.stdout
    );
    assert!(!r.stdout.contains("STARTED=20"), "{}", r.stdout);

    // The flag wins over the file; the file's other settings still apply.
    let r = run_sh(ws.path(), &["--policy", &pol, "--pids", "100"], fork20);
    assert_eq!(
        r.code, 0,
        "--pids 100 did not override the file: {}",
        r.stderr
    );
    assert!(r.stdout.contains("STARTED=20"), "{}", r.stdout);
    assert!(
        r.stdout.contains("FROM_POLICY=yes"),
        "env from the policy file lost: {}",
        r.stdout
    );

    let r = airlock(
        ws.path(),
        &["receipt", "--json", "--policy", &pol, "--pids", "100"],
    );
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("receipt JSON");
    let layers = doc["receipt"]["layers"].as_array().unwrap();
    let pids = layers.iter().find(|l| l["layer"] == "pids").unwrap();
    assert!(pids["detail"].as_str().unwrap().contains("100"), "{pids}");
    let time = layers.iter().find(|l| l["layer"] == "time").unwrap();
    assert_eq!(time["status"], "enforced", "{time}");

    // A file timeout is enforced.
    std::fs::write(&pol, "[limits]\ntimeout = \"1s\"\n").unwrap();
    let r = run_sh(ws.path(), &["--policy", &pol], "sleep 20");
    assert_eq!(r.code, 124);
}

#[test]
fn workspace_mapping_and_extra_grants() {
    let cwd = TempDir::new("lc-map-cwd");
    let ws = TempDir::new("lc-map-ws");
    let ro = TempDir::new("lc-map-ro");
    let rw = TempDir::new("lc-map-rw");
    std::fs::write(ro.join("input.txt"), "read me\n").unwrap();
    std::fs::create_dir(ws.join("secret")).unwrap();
    std::fs::write(ws.join("secret/key.pem"), "PRIVATE\n").unwrap();
    std::fs::create_dir(ws.join("public")).unwrap();
    std::fs::write(ws.join("public/readme"), "visible\n").unwrap();
    let mapping = format!("{}:/workspace", ws.path().display());
    let (ro_s, rw_s) = (
        ro.path().to_string_lossy().into_owned(),
        rw.path().to_string_lossy().into_owned(),
    );
    let deny = ws.join("secret").to_string_lossy().into_owned();
    let script = format!(
        "pwd; echo inside > made.txt; cat public/readme; cat {ro_s}/input.txt; \
         echo nope > {ro_s}/w 2>/dev/null && echo RO-WRITABLE; echo out > {rw_s}/out.txt; \
         cat secret/key.pem 2>/dev/null && echo SECRET-READ; ls secret 2>/dev/null | grep -q key && echo SECRET-LISTED; \
         ls {ws} 2>/dev/null | grep -q public && echo HOST-PATH-VISIBLE; echo end",
        ws = ws.path().display()
    );
    let r = run_sh(
        cwd.path(),
        &[
            "--workspace",
            &mapping,
            "--read",
            &ro_s,
            "--write",
            &rw_s,
            "--deny",
            &deny,
        ],
        &script,
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"/workspace"),
        "pwd inside: {}",
        r.stdout
    );
    assert!(
        r.stdout.contains("visible\n"),
        "sibling of the denied dir not visible: {}",
        r.stdout
    );
    assert!(
        r.stdout.contains("read me\n"),
        "--read path not readable: {}",
        r.stdout
    );
    for bad in [
        "RO-WRITABLE",
        "SECRET-READ",
        "SECRET-LISTED",
        "HOST-PATH-VISIBLE",
    ] {
        assert!(!r.stdout.contains(bad), "{bad}: {}", r.stdout);
    }
    assert_eq!(lines.last(), Some(&"end"));
    assert_eq!(
        std::fs::read_to_string(ws.join("made.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(
        std::fs::read_to_string(rw.join("out.txt")).unwrap(),
        "out\n"
    );
    assert!(!ro.join("w").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("secret/key.pem")).unwrap(),
        "PRIVATE\n",
        "denied file changed"
    );
    assert!(
        tree(cwd.path()).is_empty(),
        "the current directory is not the workspace here: {:?}",
        tree(cwd.path())
    );
    assert_eq!(
        tree(ws.path()),
        set(&[
            "made.txt",
            "public",
            "public/readme",
            "secret",
            "secret/key.pem"
        ])
    );
}

#[test]
fn stdin_passed_through_and_no_stdin_gives_eof() {
    let ws = TempDir::new("lc-stdin");
    let mut child = spawn_airlock(ws.path(), &["run", "--", "cat"], Stdio::piped());
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let r = to_run(child.wait_with_output().unwrap());
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "hello\n"),
        "stderr: {}",
        r.stderr
    );

    // --no-stdin: EOF at once although airlock's own stdin stays open.
    let mut child = spawn_airlock(
        ws.path(),
        &[
            "run",
            "--no-stdin",
            "--timeout",
            "10s",
            "--",
            "sh",
            "-c",
            "cat; echo EOF",
        ],
        Stdio::piped(),
    );
    let keep = child.stdin.take();
    let r = to_run(child.wait_with_output().unwrap());
    drop(keep);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "EOF\n"),
        "stderr: {}",
        r.stderr
    );
}

/// Runs `airlock <args>` under a new pseudo-terminal (driven by python's `pty.fork`) and returns
/// what appeared on the terminal, ending with `RC=<airlock's exit code>`.
fn run_in_pty(cwd: &Path, args: &[&str]) -> String {
    const DRIVER: &str = r#"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    st = os.fstat(0)
    os.write(1, b"CALLER-TTY=%x:%x\n" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
end = time.time() + 20
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if not r:
        continue
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
sys.stdout.write("\nRC=%d\n" % os.waitstatus_to_exitcode(st))
"#;
    let bin = airlock_bin();
    let out = Command::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .arg(&bin)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run python3 on the host for the pty driver");
    assert!(
        out.status.success(),
        "pty driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TIOCSTI_PY: &str = r#"
import errno, fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"X")
    print("INJECTED")
except OSError as e:
    print("TIOCSTI-" + errno.errorcode[e.errno])
"#;

fn line_value<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    out.lines().find_map(|l| l.strip_prefix(key))
}

#[test]
fn tty_box_gets_its_own_terminal_and_cannot_inject() {
    let ws = TempDir::new("lc-tty");
    let script = format!(
        "test -t 0 && echo ISATTY; test -t 1 && echo OUT-ISATTY; echo BOX-TTY=$(stat -Lc %t:%T /proc/self/fd/0); \
         python3 -c '{TIOCSTI_PY}'; exit 9"
    );
    let out = run_in_pty(ws.path(), &["run", "--", "sh", "-c", &script]);
    assert!(
        out.contains("\nRC=9"),
        "exit code not propagated under a tty: {out}"
    );
    assert!(
        out.lines().any(|l| l == "ISATTY"),
        "stdin is not a terminal in the box: {out}"
    );
    assert!(
        out.lines().any(|l| l == "OUT-ISATTY"),
        "stdout is not a terminal in the box: {out}"
    );
    let caller = line_value(&out, "CALLER-TTY=").expect("driver printed its terminal");
    let inside = line_value(&out, "BOX-TTY=").expect("box printed its terminal");
    assert_ne!(
        caller, inside,
        "the box was handed the caller's own terminal: {out}"
    );
    assert!(
        out.contains("TIOCSTI-EPERM"),
        "TIOCSTI was not refused with EPERM: {out}"
    );
    assert!(!out.contains("INJECTED"), "{out}");
}

/// `tty` / `ttyname()` name the box's terminal. The brief asked for a /dev/pts path; the project
/// chose (commit c9d708c) to show the box's pty as /dev/console, since the box has its own
/// devpts instance: both are accepted, but the name must resolve to the very device on fd 0.
#[test]
fn tty_name_inside_box_names_its_terminal() {
    let ws = TempDir::new("lc-ttyname");
    let script = "t=$(tty) && echo TTY=$t; \
        [ \"$(stat -Lc %t:%T \"$t\")\" = \"$(stat -Lc %t:%T /proc/self/fd/0)\" ] && echo SAME-DEVICE; \
        python3 -c 'import os; print(\"PY-TTYNAME=\" + os.ttyname(0))'";
    let out = run_in_pty(ws.path(), &["run", "--", "sh", "-c", script]);
    let name =
        line_value(&out, "TTY=").unwrap_or_else(|| panic!("`tty` fails inside the box: {out}"));
    assert!(
        name.starts_with("/dev/pts/") || name == "/dev/console",
        "unexpected terminal name {name:?}: {out}"
    );
    assert!(
        out.lines().any(|l| l == "SAME-DEVICE"),
        "{name} is not the box's stdin device: {out}"
    );
    assert_eq!(
        line_value(&out, "PY-TTYNAME="),
        Some(name),
        "os.ttyname(0) disagrees: {out}"
    );
    assert!(out.contains("\nRC=0"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------------------------

fn signal_is_forwarded(sig: libc::c_int, name: &str, code: i32) {
    let ws = TempDir::new("lc-fwd");
    let m = marker();
    let snap = HostSnapshot::take();
    let script = format!(
        "trap 'echo GOT-{name}; exit {code}' {name}; echo ready; while :; do sleep 0.1{m}; done"
    );
    let mut child = spawn_airlock(
        ws.path(),
        &["run", "--", "sh", "-c", &script],
        Stdio::null(),
    );
    let pid = child.id();
    let mut lines = LineReader::new(&mut child);
    lines.wait_for("ready", Duration::from_secs(10));
    send_signal(pid, sig);
    let got = wait_code(&mut child);
    let stderr = read_stderr(&mut child);
    let out = lines.rest();
    assert!(
        out.iter().any(|l| l == &format!("GOT-{name}")),
        "the box did not see {name}: stdout {out:?}, stderr {stderr}"
    );
    assert_eq!(got, code, "exit code after {name}: stderr {stderr}");
    snap.assert_clean(pid, &[&m]);
    assert!(
        tree(ws.path()).is_empty(),
        "workspace: {:?}",
        tree(ws.path())
    );
}

#[test]
fn sigterm_to_airlock_is_forwarded() {
    signal_is_forwarded(libc::SIGTERM, "TERM", 3);
}

#[test]
fn sigint_to_airlock_is_forwarded() {
    signal_is_forwarded(libc::SIGINT, "INT", 4);
}

#[test]
fn airlock_sigkilled_mid_run_leaves_nothing_behind() {
    let ws = TempDir::new("lc-sigkill");
    let (m1, m2) = (marker(), marker());
    let snap = HostSnapshot::take();
    let script = format!("setsid sleep 1000.{m1} & sleep 1000.{m2}");
    let mut child = spawn_airlock(
        ws.path(),
        &["run", "--", "sh", "-c", &script],
        Stdio::null(),
    );
    let pid = child.id();
    // The sleeps themselves (their argv is `sleep\01000.<m>`; airlock's own argv has a space).
    let (s1, s2) = (
        format!("sleep\u{0}1000.{m1}"),
        format!("sleep\u{0}1000.{m2}"),
    );
    eventually(Duration::from_secs(10), || {
        if pids_with_marker(&s1).is_empty() || pids_with_marker(&s2).is_empty() {
            Err("the box's sleeps did not start".into())
        } else {
            Ok(())
        }
    });
    assert!(
        ws.join(".bashrc").exists(),
        "expected placeholders during the run (test premise)"
    );
    if is_root() {
        let prefix = format!("airlock-{pid}-");
        let cgs = leftover_cgroups()
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .count();
        assert!(
            cgs > 0,
            "expected the box's cgroups during the run (test premise)"
        );
    }
    send_signal(pid, libc::SIGKILL);
    assert_eq!(wait_code(&mut child), 137);
    snap.assert_clean(pid, &[&format!("1000.{m1}"), &format!("1000.{m2}")]);
    eventually(Duration::from_secs(5), || {
        let left = tree(ws.path());
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "placeholders left in the workspace after airlock was SIGKILLed: {left:?}"
            ))
        }
    });
}

/// Runs a box that leaves a background `sleep 1000.<marker>` behind, then checks that the host
/// is clean and the workspace holds exactly `want_files`.
fn exit_path_is_clean(
    tag: &str,
    flags: &[&str],
    body: &str,
    want_code: i32,
    want_files: &[&str],
) -> serde_json::Value {
    let ws = TempDir::new(tag);
    let res = TempDir::new("lc-result");
    let m = marker();
    let snap = HostSnapshot::take();
    let result_file = res.join("r.json").to_string_lossy().into_owned();
    let mut all = vec!["--result", result_file.as_str()];
    all.extend_from_slice(flags);
    let script = format!("sleep 1000.{m} & setsid sleep 1001.{m} & {body}");
    let (r, pid) = run_tracked(ws.path(), &all, &script);
    assert_eq!(r.code, want_code, "stdout {} stderr {}", r.stdout, r.stderr);
    snap.assert_clean(pid, &[&m]);
    assert_eq!(
        tree(ws.path()),
        set(want_files),
        "the workspace holds more or less than what the box wrote"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result_file).expect("result file"))
            .expect("JSON");
    assert_eq!(doc["exit_code"], want_code);
    doc
}

#[test]
fn clean_after_normal_exit() {
    exit_path_is_clean(
        "lc-clean-ok",
        &[],
        "echo a > a.txt; mkdir d; echo b > d/b; exit 0",
        0,
        &["a.txt", "d", "d/b"],
    );
}

#[test]
fn clean_after_signal_exit() {
    let doc = exit_path_is_clean(
        "lc-clean-sig",
        &[],
        "echo a > a.txt; kill -TERM $$",
        143,
        &["a.txt"],
    );
    assert_eq!(doc["signal"], libc::SIGTERM);
}

#[test]
fn clean_after_timeout() {
    let doc = exit_path_is_clean(
        "lc-clean-timeout",
        &["--timeout", "1s"],
        "echo a > a.txt; sleep 60",
        124,
        &["a.txt"],
    );
    assert!(
        doc["limits_hit"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "timeout"),
        "{doc}"
    );
}

#[test]
fn clean_after_oom() {
    let body = "echo a > a.txt; exec python3 -c 'b = b\"x\" * (256 << 20); print(\"ALLOC-OK\")'";
    let ws_doc = exit_path_is_clean("lc-clean-oom", &["--memory", "32M"], body, 137, &["a.txt"]);
    assert!(
        ws_doc["limits_hit"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "memory"),
        "OOM not reported: {ws_doc}"
    );
    assert!(
        ws_doc["peak_memory_bytes"].as_u64().unwrap() <= 32 << 20,
        "{ws_doc}"
    );
}

#[test]
fn clean_after_command_not_found() {
    let ws = TempDir::new("lc-clean-127");
    let m = marker();
    let snap = HostSnapshot::take();
    let cmd = format!("no-such-command-{m}");
    let (r, pid) = run_args_tracked(ws.path(), &["run", "--", &cmd]);
    assert_eq!(r.code, 127, "{}", r.stderr);
    snap.assert_clean(pid, &[&m]);
    assert!(
        tree(ws.path()).is_empty(),
        "workspace: {:?}",
        tree(ws.path())
    );
}

#[test]
fn clean_after_airlock_error() {
    let ws = TempDir::new("lc-clean-125");
    let m = marker();
    let snap = HostSnapshot::take();
    let missing = format!("/nonexistent-lifecycle-{m}");
    let (r, pid) = run_args_tracked(
        ws.path(),
        &[
            "run",
            "--read",
            &missing,
            "--",
            "sleep",
            &format!("1000.{m}"),
        ],
    );
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains(&missing),
        "error does not name the path: {}",
        r.stderr
    );
    snap.assert_clean(pid, &[&m]);
    assert!(
        tree(ws.path()).is_empty(),
        "workspace: {:?}",
        tree(ws.path())
    );
}

// ---------------------------------------------------------------------------------------------
// Without root
// ---------------------------------------------------------------------------------------------

struct AsUser<'a> {
    bin: &'a Path,
    home: &'a str,
}

impl AsUser<'_> {
    fn run(&self, cwd: &Path, args: &[&str]) -> Run {
        let out = Command::new("setpriv")
            .args([
                "--reuid",
                TEST_USER,
                "--regid",
                TEST_USER,
                "--init-groups",
                "--",
            ])
            .arg(self.bin)
            .args(args)
            .current_dir(cwd)
            .env("HOME", self.home)
            .env("USER", TEST_USER)
            .stdin(Stdio::null())
            .output()
            .expect("run setpriv");
        to_run(out)
    }

    fn sh(&self, cwd: &Path, flags: &[&str], script: &str) -> Run {
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        self.run(cwd, &args)
    }
}

struct RemoveOnDrop(std::path::PathBuf);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn unprivileged_user_runs_airlock() {
    let (uid, gid, home) = ensure_test_user();
    let chown = |p: &Path| std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();

    let (_bin_dir, bin) = binary_for_test_user("lc-unpriv-bin");
    let ws = TempDir::new("lc-unpriv-ws");
    chown(ws.path());
    mode(ws.path(), 0o755);
    let outside = TempDir::new("lc-unpriv-outside");
    chown(outside.path());
    mode(outside.path(), 0o755);
    let user = AsUser {
        bin: &bin,
        home: &home,
    };

    // Switching works at all (else this test is meaningless).
    let who = Command::new("setpriv")
        .args([
            "--reuid",
            TEST_USER,
            "--regid",
            TEST_USER,
            "--init-groups",
            "--",
            "id",
            "-u",
        ])
        .output()
        .expect("run setpriv");
    assert_eq!(
        String::from_utf8_lossy(&who.stdout).trim(),
        uid.to_string(),
        "cannot switch to {TEST_USER}"
    );

    // check: runs, and says memory and pids use the rlimit fallbacks.
    let r = user.run(ws.path(), &["check"]);
    assert_eq!(
        r.code, 0,
        "check as {TEST_USER}: {}\n{}",
        r.stdout, r.stderr
    );
    assert!(r.stdout.contains("ok"), "{}", r.stdout);
    let line = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line: {}", r.stdout))
            .to_string()
    };
    assert!(
        line("memory").contains("fallback") && line("memory").contains("RLIMIT_AS"),
        "{}",
        line("memory")
    );
    assert!(
        line("pids").contains("fallback") && line("pids").contains("RLIMIT_NPROC"),
        "{}",
        line("pids")
    );

    // A write lands in the workspace, owned by the user.
    let r = user.sh(ws.path(), &[], "id -u; echo hi > f");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "1000");
    let md = std::fs::metadata(ws.join("f")).expect("f on the host");
    assert_eq!(
        (md.uid(), md.gid()),
        (uid, gid),
        "f is not owned by {TEST_USER}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("f")).unwrap(), "hi\n");

    // Memory bomb under --memory 64M fails.
    let r = user.run(
        ws.path(),
        &[
            "run",
            "--memory",
            "64M",
            "--",
            "python3",
            "-c",
            "b = b'x' * (256 << 20); print('ALLOC-OK')",
        ],
    );
    assert!(
        !r.stdout.contains("ALLOC-OK"),
        "256 MiB allocated under --memory 64M"
    );
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("MemoryError") || r.code == 137,
        "code {} stderr {}",
        r.code,
        r.stderr
    );

    // Bounded fork bomb under --pids 20 hits the limit.
    let m = marker();
    let r = user.sh(
        ws.path(),
        &["--pids", "20"],
        &format!("for i in $(seq 100); do sleep 5.{m} & done; echo SPAWNED-ALL"),
    );
    assert!(
        !r.stdout.contains("SPAWNED-ALL"),
        "100 processes started under --pids 20"
    );
    assert!(
        r.stderr.contains("Cannot fork") || r.stderr.contains("Resource temporarily unavailable"),
        "stderr: {}",
        r.stderr
    );

    // Planted key in the user's home, 0600: not readable from the box.
    let secret = format!("planted-secret-{m}");
    let key = Path::new(&home).join(format!(".airlock-lifecycle-key-{m}"));
    let _cleanup = RemoveOnDrop(key.clone());
    std::fs::write(&key, &secret).unwrap();
    chown(&key);
    mode(&key, 0o600);
    let r = user.sh(
        ws.path(),
        &[],
        &format!("cat {} 2>&1; echo END", key.display()),
    );
    assert!(
        !r.stdout.contains(&secret),
        "the box read the planted key: {}",
        r.stdout
    );

    // No write outside the workspace reaches the host, even where the user could write.
    let escape_home = Path::new(&home).join(format!("escape-{m}"));
    let _cleanup2 = RemoveOnDrop(escape_home.clone());
    let script = format!(
        "echo x > {o}/escape; echo x > {h}; echo x > /tmp/escape-{m}; echo x > {ws}/../escape-{m}; echo done",
        o = outside.path().display(),
        h = escape_home.display(),
        ws = ws.path().display()
    );
    let r = user.sh(ws.path(), &[], &script);
    assert!(r.stdout.contains("done"), "{}", r.stderr);
    assert!(
        tree(outside.path()).is_empty(),
        "the box wrote outside its workspace: {:?}",
        tree(outside.path())
    );
    assert!(!escape_home.exists(), "the box wrote into the user's home");
    assert!(
        !Path::new(&format!("/tmp/escape-{m}")).exists(),
        "the box wrote into the host's /tmp"
    );
    assert!(!ws
        .path()
        .parent()
        .unwrap()
        .join(format!("escape-{m}"))
        .exists());

    // A result file the box swaps for a symlink to a file of the user's is not written through,
    // in this run or the next.
    let victim = outside.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    chown(&victim);
    let swap = format!("rm -f result.json; ln -s {} result.json", victim.display());
    let r = user.run(
        ws.path(),
        &["run", "--result", "result.json", "--", "sh", "-c", &swap],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("was replaced during the run"),
        "{}",
        r.stderr
    );
    let r = user.run(ws.path(), &["run", "--result", "result.json", "--", "true"]);
    assert_eq!(
        r.code, 125,
        "a planted result symlink was followed: {}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "the result went through the symlink"
    );
    std::fs::remove_file(&victim).unwrap();
    std::fs::remove_file(ws.join("result.json")).unwrap();

    // Exit codes and timeout.
    assert_eq!(user.sh(ws.path(), &[], "exit 7").code, 7);
    let r = user.sh(ws.path(), &["--timeout", "1s"], &format!("sleep 30.{m}"));
    assert_eq!(r.code, 124, "{}", r.stderr);

    eventually(Duration::from_secs(5), || {
        let left = pids_with_marker(&m);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "processes remain: {:?}",
                left.iter().map(|p| cmdline(*p)).collect::<Vec<_>>()
            ))
        }
    });
    assert_eq!(
        tree(ws.path()),
        set(&["f"]),
        "placeholders or stray files left in the user's workspace"
    );
}

#[test]
fn a_path_granted_twice_or_as_the_workspace_is_one_mount() {
    // As root the grants are idmapped mounts made once per target: a second grant of the same
    // path used to fail the box's setup ("attach idmapped mount: Bad file descriptor").
    let t = TempDir::new("twice");
    let ws = t.join("ws");
    let data = t.join("data");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("in.txt"), "in\n").unwrap();
    let alias = t.join("alias");
    std::os::unix::fs::symlink(&data, &alias).unwrap();
    let (d, a, w) = (
        data.to_str().unwrap(),
        alias.to_str().unwrap(),
        ws.to_str().unwrap(),
    );
    let script =
        format!("cat {d}/in.txt && echo out > {d}/out.txt && echo ws > ws.txt && echo done");
    let r = run_sh(
        &ws,
        &["--read", d, "--read", a, "--write", d, "--read", w],
        &script,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, "in\ndone\n", "{}", r.stderr);
    assert!(
        r.stderr.contains("leads through a symlink"),
        "the alias is not explained: {}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(data.join("out.txt")).unwrap(),
        "out\n",
        "--write wins over --read"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("ws.txt")).unwrap(),
        "ws\n",
        "the workspace stays writable"
    );
}
