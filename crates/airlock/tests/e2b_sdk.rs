//! E2B conformance: E2B's official SDKs, installed from the registries by
//! `scripts/e2b-clients.sh`, drive a real `airlock serve` through the suites in `tests/e2b/`:
//! Python current (sync and async APIs), Python older (v1 endpoints; sync and async) and
//! JavaScript. The whole set runs twice, each time against a fresh server, and both tries must
//! pass: a flaky test is a failing test.
//!
//! The clients are looked up in `$E2B_CLIENTS_DIR`, else `target/e2b-clients` at the workspace
//! root; when they are missing the test fails (it never skips) and says to run
//! `scripts/e2b-clients.sh`. `E2B_SUITE_AIRLOCK=/path/to/airlock` runs the suites against another
//! build of the server (a development aid; CI uses the binary built with this test).
#![allow(clippy::unwrap_used)]

mod common;

use common::{ServeProcess, TempDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many times the whole set runs, each against a fresh server.
const TRIES: usize = 2;
/// Bound on one suite run (one SDK, one API flavour). A suite takes about 15 s; ten runs at
/// this bound stay well inside CI's time even when a server hangs.
const SUITE_LIMIT: Duration = Duration::from_secs(150);

/// The repository root (two levels above this crate).
use common::repo_root;

/// Where scripts/e2b-clients.sh installed the SDKs.
struct Clients {
    py_current: PathBuf,
    py_older: PathBuf,
    js_modules: PathBuf,
    /// The pinned `typescript` package the suites copy into boxes for TypeScript cells.
    typescript: PathBuf,
}

impl Clients {
    /// Finds the installed clients, or fails the test saying how to install them.
    fn find() -> Clients {
        let dir = std::env::var_os("E2B_CLIENTS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("target/e2b-clients"));
        let clients = Clients {
            py_current: dir.join("py-current/bin/python"),
            py_older: dir.join("py-older/bin/python"),
            js_modules: dir.join("js/node_modules"),
            typescript: dir.join("typescript/node_modules/typescript"),
        };
        let missing: Vec<String> = [
            &clients.py_current,
            &clients.py_older,
            &clients.js_modules.join("e2b/package.json"),
            &clients.typescript.join("lib/typescript.js"),
        ]
        .into_iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
        assert!(
            missing.is_empty(),
            "E2B's SDKs are not installed (missing: {}). Run `scripts/e2b-clients.sh` (scripts/test.sh does) \
             to install the pinned Python and npm clients under {}, or point E2B_CLIENTS_DIR at them.",
            missing.join(", "),
            dir.display()
        );
        clients
    }
}

/// One suite: an SDK, an API flavour, and the command that runs its tests.
struct Suite {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    extra_env: Vec<(&'static str, String)>,
}

fn suites(clients: &Clients) -> Vec<Suite> {
    let pytest = |python: &Path, api: &str| -> (PathBuf, Vec<String>) {
        let args = [
            "-m",
            "pytest",
            "tests/e2b/python",
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "--api",
            api,
        ];
        (
            python.to_path_buf(),
            args.iter().map(|s| s.to_string()).collect(),
        )
    };
    let typescript = ("E2B_TYPESCRIPT", clients.typescript.display().to_string());
    let python = |name, python: &Path, api| {
        let (program, args) = pytest(python, api);
        Suite {
            name,
            program,
            args,
            extra_env: vec![("PYTHONDONTWRITEBYTECODE", "1".into()), typescript.clone()],
        }
    };
    vec![
        python("python e2b 2.63.0 sync", &clients.py_current, "sync"),
        python("python e2b 2.63.0 async", &clients.py_current, "async"),
        python("python e2b 2.45.1 sync", &clients.py_older, "sync"),
        python("python e2b 2.45.1 async", &clients.py_older, "async"),
        Suite {
            name: "js e2b 2.51.0",
            program: PathBuf::from("node"),
            args: vec!["--test".into(), "tests/e2b/js/conformance.test.js".into()],
            extra_env: vec![
                ("NODE_PATH", clients.js_modules.display().to_string()),
                typescript.clone(),
            ],
        },
    ]
}

/// What every server the suites run against is started with: sandbox ports served under
/// `localhost` (`tests/e2b/python/test_ports.py` reaches `{port}-{id}.localhost`).
const SERVE_ARGS: &[&str] = &["--e2b-domain", "localhost"];

/// A fresh `airlock serve` and the E2B-format key the SDKs authenticate with.
struct E2bServer {
    serve: ServeProcess,
    key: String,
    _data: TempDir,
}

impl E2bServer {
    fn start() -> E2bServer {
        let data = TempDir::new("e2b-sdk");
        // A development aid: E2B_SUITE_AIRLOCK names another airlock binary to test.
        let serve = match std::env::var_os("E2B_SUITE_AIRLOCK") {
            Some(bin) => ServeProcess::start_bin(Path::new(&bin), data.path(), SERVE_ARGS),
            None => ServeProcess::start(data.path(), SERVE_ARGS),
        };
        let key = e2b_key(&serve);
        E2bServer {
            serve,
            key,
            _data: data,
        }
    }
}

/// The E2B key the server printed on its first start (`ServeProcess` reads the line), checked
/// to be in E2B's format (`e2b_` and 40 hex digits).
fn e2b_key(serve: &ServeProcess) -> String {
    let key = serve.printed_e2b_key.clone().unwrap_or_else(|| {
        panic!(
            "`airlock serve` printed no E2B API key on its first start; it printed: {:?}",
            serve.printed
        )
    });
    let hex = key.strip_prefix("e2b_").unwrap_or("");
    assert!(
        hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "the E2B key is not e2b_ and 40 hex digits: {key}"
    );
    key
}

/// What one suite run produced.
struct Outcome {
    passed: bool,
    took: Duration,
    output: String,
}

/// Runs `suite` against `server`, bounded by SUITE_LIMIT; the suite's processes are killed (by
/// their process group, which this function created) if it overruns.
fn run_suite(suite: &Suite, server: &E2bServer) -> Outcome {
    run_suite_within(suite, server, SUITE_LIMIT)
}

/// [`run_suite`] with its own time limit.
fn run_suite_within(suite: &Suite, server: &E2bServer, limit: Duration) -> Outcome {
    use std::os::unix::process::CommandExt;
    let logs = TempDir::new("e2b-suite");
    let log_path = logs.join("output.txt");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = Command::new(&suite.program);
    cmd.args(&suite.args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0);
    for var in [
        "E2B_DOMAIN",
        "E2B_DEBUG",
        "E2B_ACCESS_TOKEN",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("E2B_API_KEY", &server.key)
        .env("E2B_API_URL", &server.serve.base)
        .env("E2B_SANDBOX_URL", &server.serve.base)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for (k, v) in &suite.extra_env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", suite.program.display()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            // SAFETY: signals the process group this function created for the suite.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut output = std::fs::read_to_string(&log_path).unwrap_or_default();
    if status.is_none() {
        output.push_str(&format!(
            "\n[killed: the suite ran longer than {} s]\n",
            limit.as_secs()
        ));
    }
    Outcome {
        passed: status.is_some_and(|s| s.success()),
        took: started.elapsed(),
        output,
    }
}

/// The last `n` lines of `text`.
/// Runs a Python `script` with E2B's SDK pointed at a server (`base`, authenticated by `key`),
/// straight to loopback (no proxy from the environment).
fn sdk_script(python: &Path, key: &str, base: &str, script: &str) -> std::process::Output {
    Command::new(python)
        .args(["-c", script])
        .env("E2B_API_KEY", key)
        .env("E2B_API_URL", base)
        .env("E2B_SANDBOX_URL", base)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .output()
        .unwrap()
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn e2b_sdks_pass_twice_against_fresh_servers() {
    let clients = Clients::find();
    let suites = suites(&clients);
    let mut failures = Vec::new();
    for attempt in 1..=TRIES {
        let mut server = E2bServer::start();
        for suite in &suites {
            let outcome = run_suite(suite, &server);
            eprintln!(
                "try {attempt}: {}: {} in {:.1} s",
                suite.name,
                if outcome.passed { "passed" } else { "FAILED" },
                outcome.took.as_secs_f64()
            );
            if !outcome.passed {
                eprintln!(
                    "---- {} (try {attempt}) ----\n{}\n----",
                    suite.name,
                    tail(&outcome.output, 120)
                );
                failures.push(format!("try {attempt}: {}", suite.name));
            }
        }
        server.serve.stop();
    }
    assert!(
        failures.is_empty(),
        "E2B SDK suites failed: {}",
        failures.join("; ")
    );
}

/// The same SDK, against a server run by an unprivileged user (boxes without root: no idmapping,
/// rlimits instead of cgroups where the host delegates none): airlock must work without root.
#[test]
fn an_unprivileged_server_passes_the_current_python_suite() {
    let clients = Clients::find();
    let suite = suites(&clients).into_iter().next().unwrap();
    let (_bin_dir, bin) = common::binary_for_test_user("e2b-unpriv-bin");
    let data = TempDir::new("e2b-sdk-unpriv");
    let serve = ServeProcess::start_as_test_user(&bin, data.path(), SERVE_ARGS);
    let uid = std::fs::read_to_string(format!("/proc/{}/status", serve.pid())).unwrap();
    let uid_line = uid
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .to_string();
    assert!(
        !uid_line.split_whitespace().skip(1).any(|u| u == "0"),
        "the server must not run as root: {uid_line}"
    );
    let key = e2b_key(&serve);
    let server = E2bServer {
        serve,
        key,
        _data: data,
    };
    // An unprivileged server's native boxes have no freezer (the host delegates no cgroup), so
    // a pause is refused, and the suite checks that it is an error, never a silent success.
    let mut suite = suite;
    suite
        .extra_env
        .push(("AIRLOCK_E2B_PAUSE", "refused".into()));
    let outcome = run_suite(&suite, &server);
    eprintln!(
        "unprivileged: {}: {} in {:.1} s",
        suite.name,
        if outcome.passed { "passed" } else { "FAILED" },
        outcome.took.as_secs_f64()
    );
    let E2bServer { serve: mut s, .. } = server;
    s.stop();
    assert!(outcome.passed, "{}", tail(&outcome.output, 150));
}

/// E2B's code-interpreter SDK, unchanged, against the built template: `Sandbox.create(template=…)`
/// (by its stored name, and by E2B's own `code-interpreter-v1`, which the server aliases to it)
/// and the canonical pandas example. The box runs on the template's root, not the host's /usr.
#[test]
fn the_code_interpreter_sdk_runs_pandas_on_the_built_template() {
    let clients = Clients::find();
    let data = common::data_dir_with_code_interpreter();
    let mut serve = ServeProcess::start(data.path(), &[]);
    let key = e2b_key(&serve);
    let script = r#"
import os, sys
from e2b_code_interpreter import Sandbox
for name in ["code-interpreter", "code-interpreter-v1"]:
    sbx = Sandbox.create(template=name)
    try:
        sbx.files.write("/home/user/data.csv", "a,b\n1,2\n3,4\n5,9\n")
        ex = sbx.run_code("import pandas as pd\npd.read_csv('/home/user/data.csv').describe()")
        assert ex.error is None, ex.error
        text = ex.text or "".join(r.text or "" for r in ex.results)
        assert "mean" in text and "3.0" in text, text
        # The host has hyperfine (scripts/test.sh installs it); the template does not.
        probe = sbx.commands.run("test -e /usr/bin/hyperfine && echo host-root || echo template-root")
        assert probe.stdout.strip() == "template-root", probe.stdout
        print(name, "ok")
    finally:
        sbx.kill()
try:
    Sandbox.create(template="no-such-template")
    print("unknown template accepted")
    sys.exit(1)
except Exception as e:
    assert "code-interpreter" in str(e), str(e)
    print("unknown refused")
"#;
    let out = sdk_script(&clients.py_current, &key, &serve.base, script);
    serve.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    assert_eq!(
        stdout,
        "code-interpreter ok\ncode-interpreter-v1 ok\nunknown refused\n"
    );
}

/// A package with no dependencies, built on the host with `dpkg-deb`: `/usr/bin/airlock-hello`.
fn hello_deb(dir: &Path) -> PathBuf {
    let root = dir.join("pkg");
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        "Package: airlock-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: airlock tests <tests@invalid>\nDescription: a test package\n",
    )
    .unwrap();
    let bin = root.join("usr/bin/airlock-hello");
    std::fs::write(
        &bin,
        "#!/bin/sh\necho hello from a package root installed\n",
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let deb = dir.join("airlock-hello.deb");
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&root)
        .arg(&deb)
        .output()
        .expect("run dpkg-deb (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    deb
}

/// `user="root"` on a template box: root installs a package with apt (no network: a local
/// .deb) and the box user runs it. Root is uid 0 of a user namespace nested in the box's, so
/// the template's system directories, which a box holds as its user's, are root's to change.
/// The box user is refused by dpkg itself (it asks for uid 0): not a boundary, only what apt
/// users expect.
#[test]
fn root_installs_a_package_with_apt_on_the_built_template() {
    root_installs_a_package_with_apt("native");
}

/// The same in a gVisor box (root: a user namespace of each root command's own, inside the
/// Sentry) on the template's image.
#[test]
fn root_installs_a_package_with_apt_on_the_built_template_in_gvisor() {
    root_installs_a_package_with_apt("gvisor");
}

/// The same in a microVM box (root: the nested user namespace inside the guest kernel).
#[test]
fn root_installs_a_package_with_apt_on_the_built_template_in_a_microvm() {
    root_installs_a_package_with_apt("microvm");
}

fn root_installs_a_package_with_apt(backend: &str) {
    let clients = Clients::find();
    let data = common::data_dir_with_code_interpreter();
    let work = TempDir::new("e2b-apt");
    let deb = hello_deb(work.path());
    let mut serve = ServeProcess::start(data.path(), &["--backend", backend]);
    let key = e2b_key(&serve);
    let script = format!(
        r#"
from e2b import Sandbox
sbx = Sandbox.create(template="code-interpreter")
try:
    sbx.files.write("/tmp/airlock-hello.deb", open({deb:?}, "rb").read())
    # dpkg itself refuses anyone but root.
    denied = sbx.commands.run("apt-get install -y /tmp/airlock-hello.deb 2>&1; echo exit=$?", user="user")
    assert "superuser" in denied.stdout and "exit=100" in denied.stdout, denied.stdout
    print("user refused")
    r = sbx.commands.run("apt-get install -y /tmp/airlock-hello.deb 2>&1; echo exit=$?", user="root", timeout=120)
    assert "Setting up airlock-hello" in r.stdout and "exit=0" in r.stdout, r.stdout
    print(sbx.commands.run("airlock-hello").stdout, end="")
    print(sbx.commands.run("dpkg-query -W -f='${{Status}}\n' airlock-hello").stdout, end="")
    print(sbx.commands.run("stat -c '%U %a' /usr/bin/airlock-hello", user="root").stdout, end="")
finally:
    sbx.kill()
"#,
        deb = deb.display().to_string()
    );
    let out = sdk_script(&clients.py_current, &key, &serve.base, &script);
    serve.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: {stdout}\n{}",
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    assert_eq!(
        stdout,
        "user refused\nhello from a package root installed\ninstall ok installed\nroot 755\n",
        "{backend}"
    );
}

/// The same SDK against a server whose boxes are microVMs (`--backend microvm`): create,
/// `commands.run`, files, `run_code`, each answered by an agent in its own guest kernel. A
/// microVM's box user is 1000, as in a native box, whoever runs the server (QEMU's user
/// namespace maps it to the server's uid). Every create restores a VM under TCG.
#[test]
fn the_current_python_suite_passes_against_microvm_boxes() {
    python_suite_against("microvm");
}

/// Issue 19's seed scenario through E2B's code-interpreter SDK, unchanged, on `backend` boxes
/// of the code-interpreter template: `run_code` reads a CSV into a DataFrame and pivots it; the
/// box is paused (explicitly, then by the server's idle timeout, then by its own timeout with
/// `lifecycle.on_timeout = "pause"`), resumed by `Sandbox.connect`, and the DataFrame, the
/// pivot and the files are still there each time. A paused box answers `state=paused` in the
/// list, a second pause is E2B's 409 (`False`), and a call on a paused box without autoResume
/// fails until `connect` resumes it.
fn seed_scenario(backend: &str) {
    let clients = Clients::find();
    let data = common::data_dir_with_code_interpreter();
    let mut serve = ServeProcess::start(data.path(), &["--backend", backend, "--idle-pause", "4s"]);
    let key = e2b_key(&serve);
    let script = r#"
import sys, time
from e2b_code_interpreter import Sandbox

CSV = "region,quarter,amount\nnorth,q1,10\nnorth,q2,20\nsouth,q1,5\nsouth,q2,7\n"

def state(sid):
    return str(Sandbox.get_info(sid).state).lower()

def wait_paused(sid, limit):
    deadline = time.time() + limit
    while "paused" not in state(sid):
        assert time.time() < deadline, f"{sid} was not paused within {limit} s: {state(sid)}"
        time.sleep(0.5)

def check(sbx, turn):
    ex = sbx.run_code("print(len(df), int(pivot.loc['north','q2']), int(pivot.values.sum()), hits)")
    assert ex.error is None, (turn, ex.error)
    out = "".join(ex.logs.stdout).strip()
    assert out.startswith("4 20 42"), (turn, out)
    assert sbx.files.read("/home/user/sales.csv") == CSV, turn
    assert sbx.files.read("/home/user/pivot.csv").startswith("region"), turn
    print(turn, "kept", out)

sbx = Sandbox.create(template="code-interpreter", timeout=600)
sid = sbx.sandbox_id
try:
    sbx.files.write("/home/user/sales.csv", CSV)
    ex = sbx.run_code(
        "import pandas as pd\n"
        "df = pd.read_csv('/home/user/sales.csv')\n"
        "pivot = df.pivot(index='region', columns='quarter', values='amount')\n"
        "pivot.to_csv('/home/user/pivot.csv')\n"
        "hits = 1\n"
        "print(pivot.loc['south','q1'])"
    )
    assert ex.error is None, ex.error
    assert "".join(ex.logs.stdout).strip() == "5", ex.logs

    # Explicit pause: listed as paused; a second pause is E2B's 409.
    assert sbx.pause() is not False
    assert "paused" in state(sid), state(sid)
    listed = [s.sandbox_id for s in Sandbox.list().next_items() if "paused" in str(s.state).lower()]
    assert sid in listed, listed
    assert sbx.pause() is False
    sbx = Sandbox.connect(sid)
    check(sbx, "explicit")
    sbx.run_code("hits += 0")

    # Idle: no request and nothing running for 4 s pauses it; without autoResume a call fails
    # until connect resumes it.
    wait_paused(sid, 60)
    try:
        sbx.run_code("1")
        print("a paused box answered without a resume")
        sys.exit(1)
    except Exception as e:
        pass
    assert "paused" in state(sid)
    sbx = Sandbox.connect(sid)
    check(sbx, "idle")
finally:
    sbx.kill()

# The box's own timeout pauses it (lifecycle.on_timeout = "pause") instead of killing it.
t = Sandbox.create(template="code-interpreter", timeout=600, lifecycle={"on_timeout": "pause"})
tid = t.sandbox_id
try:
    t.files.write("/home/user/sales.csv", CSV)
    ex = t.run_code(
        "import pandas as pd\n"
        "df = pd.read_csv('/home/user/sales.csv')\n"
        "pivot = df.pivot(index='region', columns='quarter', values='amount')\n"
        "pivot.to_csv('/home/user/pivot.csv')\n"
        "hits = 1"
    )
    assert ex.error is None, ex.error
    # Its life ends 3 s from now (the work above took longer than that under TCG).
    t.set_timeout(3)
    wait_paused(tid, 60)
    t = Sandbox.connect(tid, timeout=600)
    check(t, "timeout")
finally:
    t.kill()
print("done")
"#;
    let out = sdk_script(&clients.py_current, &key, &serve.base, script);
    serve.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: {stdout}\n{}",
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    let turns: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split(" kept ").next().filter(|_| l.contains(" kept ")))
        .collect();
    assert_eq!(turns, ["explicit", "idle", "timeout"], "{stdout}");
    assert!(stdout.ends_with("done\n"), "{stdout}");
    // Every snapshot went with its sandbox.
    let left: Vec<_> = std::fs::read_dir(data.join("snapshots"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "snapshots left behind: {left:?}");
}

#[test]
fn the_seed_scenario_keeps_a_dataframe_across_pauses_on_microvm_boxes() {
    seed_scenario("microvm");
}

#[test]
fn the_seed_scenario_keeps_a_dataframe_across_pauses_on_native_boxes() {
    seed_scenario("native");
}

#[test]
fn the_seed_scenario_keeps_a_dataframe_across_pauses_on_gvisor_boxes() {
    // runsc checkpoint / restore: a runsc that restores airlock boxes (scripts/test.sh sets
    // AIRLOCK_RUNSC to one; bookworm's own refuses checkpoints, and the pause would fail).
    seed_scenario("gvisor");
}

/// The same SDK against a server whose boxes are gVisor sandboxes (`--backend gvisor`, on the
/// runsc scripts/test.sh sets in AIRLOCK_RUNSC).
#[test]
fn the_current_python_suite_passes_against_gvisor_boxes() {
    python_suite_against("gvisor");
}

/// The current Python suite against a server whose boxes are `backend`'s; cases the backend
/// enforces differently say so in the suite by AIRLOCK_E2B_BACKEND.
fn python_suite_against(backend: &'static str) {
    let clients = Clients::find();
    let mut suite = suites(&clients).into_iter().next().unwrap();
    suite
        .extra_env
        .push(("AIRLOCK_E2B_BACKEND", backend.into()));
    let data = TempDir::new(&format!("e2b-sdk-{backend}"));
    let serve = ServeProcess::start(
        data.path(),
        &["--backend", backend, "--e2b-domain", "localhost"],
    );
    let key = e2b_key(&serve);
    let server = E2bServer {
        serve,
        key,
        _data: data,
    };
    let outcome = run_suite_within(&suite, &server, Duration::from_secs(600));
    eprintln!(
        "{backend}: {}: {} in {:.1} s",
        suite.name,
        if outcome.passed { "passed" } else { "FAILED" },
        outcome.took.as_secs_f64()
    );
    assert!(
        outcome.passed,
        "the E2B SDK against {backend} boxes failed:\n{}",
        tail(&outcome.output, 120)
    );
}

/// Runs `script` with E2B's current Python SDK against a server that pauses boxes idle for
/// 2 s; asserts it succeeded and returns its stdout.
fn under_idle_pause(tag: &str, script: &str) -> String {
    let clients = Clients::find();
    let data = TempDir::new(tag);
    let mut serve = ServeProcess::start(data.path(), &["--idle-pause", "2s"]);
    let key = e2b_key(&serve);
    let out = sdk_script(&clients.py_current, &key, &serve.base, script);
    serve.stop();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    stdout
}

/// A command that runs longer than the idle timeout is work, not idleness: E2B's
/// `commands.run` of a 6 s command on a server that pauses boxes idle for 2 s finishes, and the
/// box is still running after it (before, the idle sweep froze the box under the waiting
/// client). Once nothing runs, the box is paused as usual.
#[test]
fn a_command_longer_than_the_idle_timeout_finishes_and_the_box_pauses_after() {
    let script = r#"
import time
from e2b import Sandbox

def state(sid):
    return str(Sandbox.get_info(sid).state).lower()

sbx = Sandbox.create(timeout=120)
sid = sbx.sandbox_id
try:
    started = time.time()
    r = sbx.commands.run("sleep 6; echo finished", timeout=60)
    took = time.time() - started
    assert r.exit_code == 0 and r.stdout.strip() == "finished", (r.exit_code, r.stdout)
    assert took < 30, f"the command took {took:.1f} s: it was frozen"
    assert "running" in state(sid), state(sid)
    print("command finished, box running")
    deadline = time.time() + 30
    while "paused" not in state(sid):
        assert time.time() < deadline, f"not paused once idle: {state(sid)}"
        time.sleep(0.3)
    print("paused once idle")
finally:
    sbx.kill()
"#;
    assert_eq!(
        under_idle_pause("e2b-idle-work", script),
        "command finished, box running\npaused once idle\n"
    );
}

/// A background command whose client disconnected is still work: E2B keeps it running, so the
/// idle sweep must not freeze it (before, the box paused 2 s after the disconnect, with the
/// command frozen mid-way). Once it has ended the box pauses, and `Sandbox.connect` resumes it
/// with the command's output on disk, written on time.
#[test]
fn a_background_command_whose_client_left_keeps_the_box_awake_until_it_ends() {
    let script = r#"
import time
from e2b import Sandbox

def state(sid):
    return str(Sandbox.get_info(sid).state).lower()

sbx = Sandbox.create(timeout=120)
sid = sbx.sandbox_id
try:
    started = time.time()
    # The tick makes the server see at once that the client left (a silent command is only
    # noticed at the next keepalive).
    h = sbx.commands.run("sleep 1; echo tick; sleep 6; date +%s > /tmp/bg-done", background=True)
    h.disconnect()
    while time.time() - started < 5:
        assert "running" in state(sid), f"paused {time.time() - started:.1f} s in: {state(sid)}"
        time.sleep(0.3)
    print("running while the command runs")
    deadline = time.time() + 40
    while "paused" not in state(sid):
        assert time.time() < deadline, f"not paused once the command ended: {state(sid)}"
        time.sleep(0.3)
    print("paused once it ended")
    sbx = Sandbox.connect(sid)
    done = int(sbx.files.read("/tmp/bg-done").strip())
    took = done - int(started)
    assert 6 <= took <= 12, f"the command ended {took} s after its start: it was frozen"
    print("its output is there")
finally:
    sbx.kill()
"#;
    assert_eq!(
        under_idle_pause("e2b-idle-background", script),
        "running while the command runs\npaused once it ended\nits output is there\n"
    );
}
