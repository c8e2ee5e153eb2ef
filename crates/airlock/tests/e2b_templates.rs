//! E2B's Template SDK against a real `airlock serve`: templates built through the SDKs'
//! `Template.build` (Python 2.63 sync and async, Python 2.45 sync, JavaScript 2.51) with files copied and commands run,
//! then started by `Sandbox.create(name)`; `exists`, tags; a failing step; uploads over the
//! cap or unlike their hash; hostile archives (attacks: nothing is written outside the build);
//! registry images and wrong keys refused in E2B's shape, steps on a stored template; an unprivileged server's
//! rootless builds. The scripts are in
//! `tests/e2b/templates/`.
//!
//! The Debian base the builds start from is downloaded once and kept under target/
//! (`CARGO_TARGET_TMPDIR/e2b-template-bases`, seeded from templates.rs's store when it has
//! the same base), so a run does not download it again. The SDKs are the ones
//! `scripts/e2b-clients.sh` installs; missing ones fail the test, never skip it.
#![allow(clippy::unwrap_used)]

mod common;

use common::repo_root;
use common::ServeProcess;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One server at a time: each test's builds run the builder, and the machine is small.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
/// Bound on one script (a build from the cached base takes seconds; the first one downloads
/// the Debian base).
const SCRIPT_LIMIT: Duration = Duration::from_secs(600);

fn tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// Where [`Dir`]s go: under target/, or under /var/tmp when target/ itself is below /tmp (a
/// checkout there): a box's /tmp is its own, and a victim under it would be hidden in the box,
/// not shown to be untouched.
fn dir_base() -> PathBuf {
    let target = tmp();
    if !target.starts_with("/tmp") {
        return target;
    }
    // SAFETY: getuid has no arguments and cannot fail.
    let uid = unsafe { libc::getuid() };
    let p = PathBuf::from(format!("/var/tmp/airlock-e2b-templates-{uid}"));
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A directory not under /tmp (see [`dir_base`]: the attack's victim must be a path a build box
/// could name and its boxes could read), removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = dir_base().join(format!("e2b-tpl-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Hard-links every `*.tar` of `from` into `to` (a copy across filesystems), skipping ones
/// already there.
fn link_bases(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    std::fs::create_dir_all(to).unwrap();
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().ends_with(".tar") || to.join(&name).exists() {
            continue;
        }
        if std::fs::hard_link(e.path(), to.join(&name)).is_err() {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

struct Server {
    serve: ServeProcess,
    key: String,
    data: Dir,
    _guard: std::sync::MutexGuard<'static, ()>,
}

impl Server {
    fn start() -> Server {
        Server::start_with(|data| ServeProcess::start(data, &["--template-upload-max", "1M"]))
    }

    /// A server run by the unprivileged test user (its builds rootless), on a data directory
    /// that user owns (the Debian base copied in, so the kept one's owner stays).
    fn start_unprivileged(bin: &Path) -> Server {
        Server::start_with(|data| {
            // On a fresh machine no base is kept yet: this server then downloads its own
            // (mmdebstrap's rootless mode), which the drop keeps for the next run.
            let bases = data.join("templates/bases");
            let kept = std::fs::read_dir(&bases).into_iter().flatten().flatten();
            for e in kept {
                let copy = e.path().with_extension("copy");
                std::fs::copy(e.path(), &copy).unwrap();
                std::fs::rename(&copy, e.path()).unwrap();
            }
            let (uid, gid, _) = common::ensure_test_user();
            let chown = Command::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(data)
                .status()
                .unwrap();
            assert!(chown.success());
            ServeProcess::start_as_test_user(bin, data, &[])
        })
    }

    fn start_with(serve: impl FnOnce(&Path) -> ServeProcess) -> Server {
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let data = Dir::new("data");
        let bases = data.0.join("templates/bases");
        link_bases(&tmp().join("e2b-template-bases"), &bases);
        link_bases(&tmp().join("template-build-store/templates/bases"), &bases);
        let serve = serve(&data.0);
        let key = serve
            .printed_e2b_key
            .clone()
            .unwrap_or_else(|| panic!("`airlock serve` printed no E2B key: {:?}", serve.printed));
        Server {
            serve,
            key,
            data,
            _guard: guard,
        }
    }

    /// Runs `program args` with the SDK pointed at this server, bounded by SCRIPT_LIMIT;
    /// asserts it printed `OK` and exited 0.
    fn script(&self, program: &Path, args: &[&str], env: &[(&str, String)]) {
        use std::os::unix::process::CommandExt;
        let out = Dir::new("out");
        let log = out.0.join("log");
        let file = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .process_group(0)
            .env("E2B_API_KEY", &self.key)
            .env("E2B_API_URL", &self.serve.base)
            .env("E2B_SANDBOX_URL", &self.serve.base)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        for var in [
            "E2B_DOMAIN",
            "E2B_ACCESS_TOKEN",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
        ] {
            cmd.env_remove(var).env_remove(var.to_lowercase());
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {program:?}: {e}"));
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if started.elapsed() > SCRIPT_LIMIT {
                // SAFETY: signals the process group this function made for the script.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            status.is_some_and(|s| s.success()) && output.lines().any(|l| l == "OK"),
            "{program:?} {args:?} failed ({status:?}, {:.0} s):\n{output}",
            started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.serve.stop();
        // Keep the Debian base for the next run.
        link_bases(
            &self.data.0.join("templates/bases"),
            &tmp().join("e2b-template-bases"),
        );
    }
}

fn clients() -> PathBuf {
    let dir = std::env::var_os("E2B_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/e2b-clients"));
    for p in [
        "py-current/bin/python",
        "py-older/bin/python",
        "js/node_modules/e2b/package.json",
    ] {
        assert!(
            dir.join(p).exists(),
            "E2B's SDKs are not installed ({} is missing): run scripts/e2b-clients.sh",
            dir.join(p).display()
        );
    }
    dir
}

fn python() -> PathBuf {
    clients().join("py-current/bin/python")
}

fn templates_script(name: &str) -> String {
    repo_root()
        .join("tests/e2b/templates")
        .join(name)
        .display()
        .to_string()
}

/// The build context the scripts copy from: a file, a directory, a symlink to `victim`.
fn context(victim: &Path) -> Dir {
    let ctx = Dir::new("ctx");
    std::fs::write(
        ctx.0.join("greeting.txt"),
        "greeting from the build context\n",
    )
    .unwrap();
    std::fs::write(ctx.0.join("a.txt"), "a\n").unwrap();
    std::fs::create_dir_all(ctx.0.join("data/nested")).unwrap();
    std::fs::write(ctx.0.join("data/nested/deep.txt"), "deep\n").unwrap();
    std::os::unix::fs::symlink(victim, ctx.0.join("out")).unwrap();
    ctx
}

/// A victim directory holding one file, and what it holds.
fn victim() -> (Dir, Vec<(String, Vec<u8>)>) {
    let v = Dir::new("victim");
    std::fs::write(v.0.join("victim.txt"), "the host's file\n").unwrap();
    let state = listing(&v.0);
    (v, state)
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn templates_built_through_each_sdk_start_sandboxes_with_their_files_tags_and_commands() {
    let clients = clients();
    let (v, _) = victim();
    let ctx = context(&v.0);
    let server = Server::start();
    let ctx_s = ctx.0.display().to_string();
    let older = clients.join("py-older/bin/python");
    for (py, api, name) in [
        (python(), "sync", "tpl-py-sync"),
        (python(), "async", "tpl-py-async"),
        (older, "sync", "tpl-py-older"),
    ] {
        server.script(
            &py,
            &[
                &templates_script("build_and_use.py"),
                "--api",
                api,
                "--name",
                name,
                "--context",
                &ctx_s,
            ],
            &[],
        );
    }
    server.script(
        Path::new("node"),
        &[&templates_script("build_and_use.mjs"), "tpl-js", &ctx_s],
        &[(
            "NODE_PATH",
            clients.join("js/node_modules").display().to_string(),
        )],
    );
}

#[test]
fn an_upload_over_the_cap_or_unlike_its_hash_is_refused() {
    let (v, _) = victim();
    let ctx = context(&v.0);
    let server = Server::start();
    for case in ["oversized", "mismatch"] {
        server.script(
            &python(),
            &[
                &templates_script("uploads.py"),
                "--context",
                &ctx.0.display().to_string(),
                "--victim",
                &v.0.display().to_string(),
                "--case",
                case,
            ],
            &[],
        );
    }
    // Nothing of the refused uploads is kept.
    let uploads = server.data.0.join("e2b-uploads");
    let kept: Vec<String> = std::fs::read_dir(&uploads)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(kept.is_empty(), "refused uploads were kept: {kept:?}");
}

/// Attack: archives whose entries climb out with `..`, name an absolute host path, write
/// through a symlink of their own, or hard-link a host file are refused, naming the entry;
/// a symlink the real SDK uploads (pointing at the host's victim directory) is recreated
/// only inside the build box, and a step writing through it writes into the template. The
/// victim directory is unchanged and nothing is written beside the server's build and upload
/// directories.
#[test]
fn attack_archive_paths_and_symlinks_cannot_write_outside_the_build() {
    let (v, before) = victim();
    let ctx = context(&v.0);
    let server = Server::start();
    for case in ["hostile", "symlink"] {
        server.script(
            &python(),
            &[
                &templates_script("uploads.py"),
                "--context",
                &ctx.0.display().to_string(),
                "--victim",
                &v.0.display().to_string(),
                "--case",
                case,
            ],
            &[],
        );
    }
    assert_eq!(listing(&v.0), before, "the victim directory changed");
    for dir in [
        server.data.0.clone(),
        server.data.0.join("e2b-builds"),
        server.data.0.join("e2b-uploads"),
        tmp(),
        ctx.0.clone(),
    ] {
        for name in ["escape.txt", "absolute.txt", "through.txt", "owned.txt"] {
            assert!(
                !dir.join(name).exists(),
                "{} was written",
                dir.join(name).display()
            );
        }
    }
    // The template holds what the step wrote through the symlink.
    let store = server.data.0.join("templates/images");
    let found = std::fs::read_dir(&store).unwrap().flatten().any(|img| {
        let inside = img
            .path()
            .join("rootfs")
            .join(v.0.strip_prefix("/").unwrap());
        std::fs::read_to_string(inside.join("owned.txt")).is_ok_and(|s| s == "pwned\n")
    });
    assert!(
        found,
        "the write through the symlink is not in the template"
    );
    // No builder or build box is left once the server stops.
    let marker = server.data.0.display().to_string();
    drop(server);
    let left = common::pids_with_marker(&marker);
    assert!(left.is_empty(), "processes left: {left:?}");
}

#[test]
fn registry_images_and_wrong_keys_are_refused_in_e2b_shape_and_steps_build_on_a_stored_template() {
    let (v, _) = victim();
    let ctx = context(&v.0);
    let server = Server::start();
    server.script(
        &python(),
        &[
            &templates_script("uploads.py"),
            "--context",
            &ctx.0.display().to_string(),
            "--victim",
            &v.0.display().to_string(),
            "--case",
            "refusals",
        ],
        &[],
    );
}

/// The same build and use through the Python SDK against a server run by an unprivileged user:
/// its builder runs mmdebstrap's and the build box's rootless modes.
#[test]
fn an_unprivileged_server_builds_and_runs_a_template() {
    let (v, _) = victim();
    let ctx = context(&v.0);
    let (_bin_dir, bin) = common::binary_for_test_user("e2b-tpl-unpriv-bin");
    let server = Server::start_unprivileged(&bin);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.serve.pid())).unwrap();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .to_string();
    assert!(
        !uid.split_whitespace().skip(1).any(|u| u == "0"),
        "the server runs as root: {uid}"
    );
    server.script(
        &python(),
        &[
            &templates_script("build_and_use.py"),
            "--api",
            "sync",
            "--name",
            "tpl-unprivileged",
            "--context",
            &ctx.0.display().to_string(),
        ],
        &[],
    );
}
