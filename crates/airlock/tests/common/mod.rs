//! Shared helpers for the end-to-end tests: they run the real `airlock` binary, as a user would.
#![allow(dead_code)]

pub mod api;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The airlock binary built for these tests.
pub fn airlock_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// How far a box's clock is from the host's, in seconds: `box_date` runs `date +%s.%N` in the
/// box and returns its output; that time is set against the host's time around the call (0 when
/// it lies between them).
pub fn clock_skew(box_date: impl FnOnce() -> String) -> f64 {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the host's clock is after 1970")
            .as_secs_f64()
    };
    let before = now();
    let out = box_date();
    let after = now();
    let inside: f64 = out
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("the box's date {out:?}: {e}"));
    if inside < before {
        inside - before
    } else if inside > after {
        inside - after
    } else {
        0.0
    }
}

/// A directory the test owns, removed on drop (also if the test fails).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "airlock-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The result of one `airlock` invocation.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        use std::os::unix::process::ExitStatusExt;
        let code = out
            .status
            .code()
            .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0));
        Run {
            code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `airlock run <flags> -- sh -c <script>` with `cwd` as the current directory (the default
/// workspace), stdin from /dev/null.
pub fn run_sh(cwd: &Path, flags: &[&str], script: &str) -> Run {
    let mut args: Vec<&str> = vec!["run"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    airlock(cwd, &args)
}

/// The template the suites' boxes start from (`AIRLOCK_TEST_TEMPLATE=NAME`, a template in the
/// default data dir), or `None` for `host`.
pub fn test_template() -> Option<String> {
    std::env::var("AIRLOCK_TEST_TEMPLATE")
        .ok()
        .filter(|t| !t.is_empty() && t != "host")
}

/// `args` of an `airlock run` with `--template` added when the suite runs on a template. Not for
/// full-access boxes: they show the host's own filesystem, so there is no root to replace.
pub fn with_test_template<'a>(args: &[&'a str], template: &'a Option<String>) -> Vec<&'a str> {
    let mut all = args.to_vec();
    if let (Some(t), Some(&"run")) = (template, args.first()) {
        if !args.contains(&"full-access") {
            all.splice(1..1, ["--template", t.as_str()]);
        }
    }
    all
}

/// `args` of an `airlock` invocation as the shared suites run it. When `AIRLOCK_TEST_BACKEND` is
/// set, an `airlock run` that names no backend of its own (no `--backend`, no `--policy` file,
/// which may name one: that is what such a test is about) gets `--backend` of
/// [`test_backend_kind`]; with `AIRLOCK_TEST_TEMPLATE`, it gets `--template` too.
pub fn test_run_args(args: &[&str]) -> Vec<String> {
    let backend = test_backend_kind().to_string();
    let mut all: Vec<&str> = args.to_vec();
    let names_backend = all
        .iter()
        .take_while(|a| **a != "--")
        .any(|a| a.starts_with("--backend") || a.starts_with("--policy"));
    if std::env::var_os("AIRLOCK_TEST_BACKEND").is_some()
        && all.first() == Some(&"run")
        && !names_backend
    {
        all.splice(1..1, ["--backend", backend.as_str()]);
    }
    let template = test_template();
    with_test_template(&all, &template)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Runs `airlock <args>` in `cwd` (as [`test_run_args`] makes them), stdin from /dev/null.
pub fn airlock(cwd: &Path, args: &[&str]) -> Run {
    let out = Command::new(airlock_bin())
        .args(test_run_args(args))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run airlock");
    Run::from(out)
}

/// The JSON result of `airlock run --result FILE <flags> -- sh -c <script>`.
pub fn run_json(cwd: &Path, flags: &[&str], script: &str) -> (Run, serde_json::Value) {
    let dir = TempDir::new("result");
    let file = dir.join("result.json");
    let file_s = file.to_string_lossy().into_owned();
    let mut all: Vec<&str> = vec!["--result", &file_s];
    all.extend_from_slice(flags);
    let run = run_sh(cwd, &all, script);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", run.stderr));
    (run, serde_json::from_str(&text).expect("result is JSON"))
}

/// The host's mount table, to check a run left no mount behind.
pub fn host_mounts() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
}

/// Directories named `airlock-*` in every cgroup hierarchy this process is in.
pub fn leftover_cgroups() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (
            parts.next(),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let base = if ctrl.is_empty() {
            PathBuf::from("/sys/fs/cgroup/unified")
        } else {
            PathBuf::from("/sys/fs/cgroup").join(ctrl.trim_start_matches("name="))
        };
        let dir = base.join(path.trim_start_matches('/'));
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with("airlock-") {
                    found.push(e.path());
                }
            }
        }
    }
    found
}

/// The states (`FROZEN`, `THAWED`, ...) of the v1 freezer cgroups whose path contains `name`
/// that any of `pids` is in, one per cgroup.
pub fn freezer_states(pids: &[i32], name: &str) -> Vec<String> {
    let mut cgroups: Vec<String> = pids
        .iter()
        .filter_map(|p| {
            let cg = std::fs::read_to_string(format!("/proc/{p}/cgroup")).ok()?;
            cg.lines()
                .find_map(|l| l.split_once(":freezer:").map(|(_, path)| path.to_string()))
        })
        .filter(|path| path.contains(name))
        .collect();
    cgroups.sort();
    cgroups.dedup();
    cgroups
        .iter()
        .map(|path| {
            let state = format!("/sys/fs/cgroup/freezer{path}/freezer.state");
            std::fs::read_to_string(&state)
                .unwrap_or_else(|e| panic!("cannot read {state}: {e}"))
                .trim()
                .to_string()
        })
        .collect()
}

/// CPU time (clock ticks, user and system) that `pids` have used so far.
pub fn cpu_ticks(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|stat| {
            let rest = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .collect::<Vec<_>>();
            // After the command: state is field 3, utime 14 and stime 15.
            Some(rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?)
        })
        .sum()
}

/// Pids of processes whose command line contains `marker` (a unique string the test chose).
pub fn pids_with_marker(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    let me = std::process::id() as i32;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

/// Whether we run as root (some tests then also check the unprivileged path).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A real `airlock serve` on 127.0.0.1 with a port the kernel picked, stopped (SIGTERM, then
/// SIGKILL) by its PID when dropped.
pub struct ServeProcess {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The API key, if this start printed one (the first start on a data directory does).
    pub printed_key: Option<String>,
    /// The E2B-format API key (for the E2B gateway), if this start printed one.
    pub printed_e2b_key: Option<String>,
    /// Every line the server printed on stdout up to and including `listening on …`.
    pub printed: Vec<String>,
}

impl ServeProcess {
    /// Starts `airlock serve --listen 127.0.0.1:0 --data-dir DATA <extra>` and waits until it
    /// listens.
    pub fn start(data: &Path, extra: &[&str]) -> ServeProcess {
        ServeProcess::start_bin(&airlock_bin(), data, extra)
    }

    /// The same with another `airlock` binary.
    pub fn start_bin(bin: &Path, data: &Path, extra: &[&str]) -> ServeProcess {
        ServeProcess::start_with(Command::new(bin), data, extra)
    }

    /// The same, run by the unprivileged [`TEST_USER`] (`bin` must be one it can execute, see
    /// [`binary_for_test_user`]; `data` is handed to the user).
    pub fn start_as_test_user(bin: &Path, data: &Path, extra: &[&str]) -> ServeProcess {
        let (uid, gid, home) = ensure_test_user();
        std::os::unix::fs::chown(data, Some(uid), Some(gid))
            .expect("hand the data directory to the test user");
        let mut cmd = as_test_user(bin);
        cmd.env("HOME", home).env("USER", TEST_USER);
        ServeProcess::start_with(cmd, data, extra)
    }

    /// `cmd` (an airlock binary, or a wrapper that execs one) with `serve …` appended.
    /// With `AIRLOCK_TEST_BACKEND` set, the server's default backend is that one (unless
    /// `extra` names its own), so its suites run against that kind of box.
    pub fn start_with(mut cmd: Command, data: &Path, extra: &[&str]) -> ServeProcess {
        use std::io::BufRead;
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .args(extra);
        if std::env::var_os("AIRLOCK_TEST_BACKEND").is_some()
            && !extra.iter().any(|a| a.starts_with("--backend"))
        {
            cmd.args(["--backend", &test_backend_kind().to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start airlock serve");
        let mut out = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let (mut printed_key, mut printed_e2b_key, mut base, mut printed) =
            (None, None, None, Vec::new());
        let mut line = String::new();
        while base.is_none() {
            line.clear();
            assert!(
                out.read_line(&mut line).expect("read the server's stdout") > 0,
                "the server exited before listening"
            );
            printed.push(line.trim_end().to_string());
            if let Some(k) = line.trim().strip_prefix("api key: ") {
                printed_key = Some(k.to_string());
            }
            if let Some(k) = line.trim().strip_prefix("e2b api key: ") {
                printed_e2b_key = Some(k.to_string());
            }
            if let Some(addr) = line.trim().strip_prefix("listening on ") {
                base = Some(addr.to_string());
            }
        }
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        ServeProcess {
            child,
            base: base.unwrap_or_default(),
            printed_key,
            printed_e2b_key,
            printed,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGTERM, then waits (bounded) for the server to exit; panics if it does not.
    pub fn stop(&mut self) {
        // SAFETY: signals our own child by its pid.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self
            .child
            .try_wait()
            .expect("wait for the server")
            .is_none()
        {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the server did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: signals our own child by its pid.
            unsafe { libc::kill(self.pid(), libc::SIGTERM) };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
            while let Ok(None) = self.child.try_wait() {
                if std::time::Instant::now() > deadline {
                    let _ = self.child.kill();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = self.child.wait();
        }
    }
}

/// The unprivileged user the tests run airlock as (created by [`ensure_test_user`]).
pub const TEST_USER: &str = "airlock-test";

/// `bin` run by the unprivileged [`TEST_USER`] (its uid, gid and groups, through `setpriv`);
/// arguments added to the command go to `bin`.
pub fn as_test_user(bin: &Path) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid",
        TEST_USER,
        "--regid",
        TEST_USER,
        "--init-groups",
        "--",
    ])
    .arg(bin);
    // The user's copy of airlock lives outside target/: point it at the microVM guest there.
    if let Some(guest) = airlock_bin().parent().and_then(Path::parent) {
        cmd.env("AIRLOCK_MICROVM_DIR", guest.join("microvm"));
    }
    cmd
}

/// Runs `airlock serve <extra>` as the [`TEST_USER`] on a fresh data directory, expecting it to
/// refuse to start; returns what it printed on stderr. Panics if it is still running after
/// 20 s (it is then ended by its PID) or exits successfully.
pub fn serve_refused_as_test_user(bin: &Path, extra: &[&str]) -> String {
    let (uid, gid, _) = ensure_test_user();
    let data = TempDir::new("serve-refused");
    std::os::unix::fs::chown(data.path(), Some(uid), Some(gid))
        .expect("hand the data directory to the test user");
    let mut child = as_test_user(bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .args(extra)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock serve");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for airlock serve") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("airlock serve {extra:?} started for the test user instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(!status.success(), "airlock serve {extra:?} exited 0: {err}");
    err
}

/// The unprivileged test user, created if missing: uid, gid, home. Must run as root; panics
/// (never skips) when the user cannot be made.
pub fn ensure_test_user() -> (u32, u32, String) {
    assert!(
        is_root(),
        "this test must run as root: it creates and switches to {TEST_USER}"
    );
    let exists = Command::new("id")
        .arg("-u")
        .arg(TEST_USER)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !exists {
        let out = Command::new("useradd")
            .args(["--system", "--create-home", "--shell", "/bin/sh", TEST_USER])
            .output()
            .expect("run useradd");
        // A concurrent creator (another test binary) may have won; the lookup below decides.
        if !out.status.success() {
            eprintln!("useradd: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let out = Command::new("getent")
        .args(["passwd", TEST_USER])
        .output()
        .expect("run getent");
    let entry = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let f: Vec<&str> = entry.split(':').collect();
    assert!(
        f.len() >= 6,
        "cannot create the test user {TEST_USER}: getent says {entry:?}"
    );
    let (uid, gid, home) = (
        f[2].parse().expect("uid"),
        f[3].parse().expect("gid"),
        f[5].to_string(),
    );
    if !Path::new(&home).is_dir() {
        std::fs::create_dir_all(&home).expect("create the test user's home");
        std::os::unix::fs::chown(&home, Some(uid), Some(gid)).expect("chown the test user's home");
    }
    ensure_subordinate_ids();
    (uid, gid, home)
}

/// The test user's subordinate uid and gid range (`/etc/subuid`, `/etc/subgid`), as a regular
/// account gets from `useradd` (a system account does not): what a rootless template build
/// needs. A range far above any account's (3000000000, 65536 ids).
fn ensure_subordinate_ids() {
    let has = |file: &str| {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with(&format!("{TEST_USER}:")))
    };
    if has("/etc/subuid") && has("/etc/subgid") {
        return;
    }
    let out = Command::new("usermod")
        .args([
            "--add-subuids",
            "3000000000-3000065535",
            "--add-subgids",
            "3000000000-3000065535",
            TEST_USER,
        ])
        .output()
        .expect("run usermod");
    // A concurrent caller (another test binary) may have added them first.
    assert!(
        has("/etc/subuid") && has("/etc/subgid"),
        "cannot give {TEST_USER} subordinate ids: usermod says {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of the airlock binary the test user can run (the build directory may sit under a
/// home the user cannot enter); keep the returned directory alive while it is used.
pub fn binary_for_test_user(tag: &str) -> (TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new(tag);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod the binary's directory");
    let bin = dir.join("airlock");
    std::fs::copy(airlock_bin(), &bin).expect("copy airlock");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod airlock");
    (dir, bin)
}

/// The host pids whose parent is `parent`.
pub fn children(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        panic!("cannot read /proc: the test needs it to find processes");
    };
    for e in procs.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// The hosts of `program`'s boxes: its children that run a box's host program, but the
/// shared cleanup sentinel and the host zygote (`airlock-zygote`, which clones every native
/// box's host as the program's child).
pub fn box_hosts(program: i32) -> Vec<i32> {
    children(program)
        .into_iter()
        .filter(|&p| {
            let cmdline = String::from_utf8_lossy(
                &std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default(),
            )
            .replace('\0', " ");
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            cmdline.contains("sandbox-host")
                && !cmdline.contains("--sentinel-service")
                && comm.trim() != "airlock-zygote"
        })
        .collect()
}

/// Every process below `roots` (children, their children, ...), found on the host.
pub fn descendants(roots: &[i32]) -> Vec<i32> {
    let mut found = Vec::new();
    let mut todo = roots.to_vec();
    while let Some(p) = todo.pop() {
        for c in children(p) {
            found.push(c);
            todo.push(c);
        }
    }
    found
}

/// Whether `pid` runs (a zombie does not count).
pub fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// The kind of box the shared suites run against: `AIRLOCK_TEST_BACKEND` (`native` when unset).
/// `scripts/test.sh` runs the suites once per built backend.
pub fn test_backend_kind() -> airlock_policy::BackendKind {
    match std::env::var("AIRLOCK_TEST_BACKEND") {
        Err(_) => airlock_policy::BackendKind::Native,
        Ok(s) => s
            .parse()
            .unwrap_or_else(|e| panic!("AIRLOCK_TEST_BACKEND={s:?}: {e}")),
    }
}

/// The backend of [`test_backend_kind`], as `airlock` itself builds it.
pub fn test_backend() -> std::sync::Arc<dyn airlock_runtime::backend::Backend> {
    let kind = test_backend_kind();
    airlock_backends::built_in(&airlock_backends::BackendConfig::new(airlock_bin()))
        .select(kind)
        .unwrap_or_else(|e| panic!("AIRLOCK_TEST_BACKEND={kind}: {e}"))
}

/// The workspace's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// The code-interpreter template (`templates/code-interpreter.toml`), built once into
/// `target/airlock-templates` (later runs find it in the store's cache by the spec's digest), and
/// a fresh data dir that holds it (hard links: the store's trees are never written).
pub fn data_dir_with_code_interpreter() -> TempDir {
    let cache = repo_root().join("target/airlock-templates");
    let build = Command::new(airlock_bin())
        .args(["template", "build", "--data-dir"])
        .arg(&cache)
        .arg(repo_root().join("templates/code-interpreter.toml"))
        .output()
        .expect("run airlock template build");
    assert!(
        build.status.success(),
        "building the code-interpreter template failed (mmdebstrap and the host's apt mirror are needed; scripts/test.sh installs mmdebstrap): {}",
        String::from_utf8_lossy(&build.stderr)
    );
    let data = TempDir::new("e2b-template");
    let cp = Command::new("cp")
        .arg("-al")
        .arg(cache.join("templates"))
        .arg(data.join("templates"))
        .status()
        .expect("run cp");
    assert!(
        cp.success(),
        "cannot link the template store into the data dir"
    );
    data
}
