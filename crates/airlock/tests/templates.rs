//! Boxes on templates, end to end through the real `airlock` binary: `airlock template import`
//! of an image the test makes, `airlock run --template`, the box's own writable layer, the
//! store's refusal to remove a template in use, and a hostile template that tries to redirect
//! the box's setup onto the host.

#![allow(clippy::unwrap_used)]

mod common;
mod template_support;

use common::{airlock, TempDir};
use std::path::{Path, PathBuf};
use template_support::{listing, make_tree, oci_from_tree, PROGRAMS};

/// A data dir with the test template `mini` imported, and a workspace.
struct Fixture {
    dir: TempDir,
    data: String,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = TempDir::new(tag);
        make_tree(&dir.join("tree"), PROGRAMS);
        oci_from_tree(
            &dir.join("tree"),
            &dir.join("image"),
            &["TPL=yes", "PATH=/usr/bin"],
            "/srv",
        );
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        let data = dir.join("data").display().to_string();
        let f = Fixture { dir, data };
        f.import_as_mini(&f.dir.join("image"));
        f
    }

    /// `airlock template import IMAGE --name mini` into the fixture's store.
    fn import_as_mini(&self, image: &Path) {
        let image = image.display().to_string();
        let r = self.cli(&[
            "template",
            "import",
            "--data-dir",
            &self.data,
            "--name",
            "mini",
            &image,
        ]);
        assert_eq!(r.code, 0, "import failed: {}", r.stderr);
        assert!(
            r.stdout.starts_with("imported mini sha256:"),
            "{}",
            r.stdout
        );
    }

    fn cli(&self, args: &[&str]) -> common::Run {
        airlock(self.dir.path(), args)
    }

    /// `airlock run --template mini --workspace none <flags> -- sh -c script`.
    fn run(&self, flags: &[&str], script: &str) -> common::Run {
        let mut args = vec!["run", "--data-dir", &self.data, "--template", "mini"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        self.cli(&args)
    }

    fn rootfs(&self) -> PathBuf {
        let r = self.cli(&["template", "inspect", "--data-dir", &self.data, "mini"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        PathBuf::from(v["rootfs"].as_str().unwrap())
    }

    fn digest(&self) -> String {
        let r = self.cli(&["template", "inspect", "--data-dir", &self.data, "mini"]);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["digest"].as_str().unwrap().to_string()
    }
}

#[test]
fn a_box_runs_on_the_template_root_with_its_env_and_cwd_and_the_receipt_names_it() {
    let f = Fixture::new("tpl-run");
    let r = f.run(
        &["--workspace", "none"],
        "echo $TPL; pwd; cat /etc/motd; id -u; test -e /usr/bin/python3 && echo HOST-LEAK; ls /usr/bin | wc -l 2>/dev/null; echo ok",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        &lines[..4],
        &["yes", "/srv", "from the template", "1000"],
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("HOST-LEAK"),
        "the host's /usr shows through: {}",
        r.stdout
    );
    let receipt = f.cli(&[
        "receipt",
        "--data-dir",
        &f.data,
        "--template",
        "mini",
        "--workspace",
        "none",
        "--",
        "true",
    ]);
    assert_eq!(receipt.code, 0, "{}", receipt.stderr);
    assert!(
        receipt.stdout.contains("template mini") && receipt.stdout.contains(&f.digest()),
        "{}",
        receipt.stdout
    );
    // Every kind runs on the template with its env and working directory, and its receipt names
    // the template (it once named the host's root for every kind but native, and gVisor refused
    // the template's own working directory).
    // The box user holds the template's files as its own in every kind (so the box's root can
    // install packages), in the box's own layer: the stored tree stays as it was.
    let before = listing(&f.rootfs());
    for backend in ["gvisor", "microvm"] {
        let r = f.run(
            &["--workspace", "none", "--backend", backend],
            "echo $TPL; pwd; cat /etc/motd; stat -c %u /etc/motd; echo mine > /etc/motd && cat /etc/motd",
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "yes\n/srv\nfrom the template\n1000\nmine\n"),
            "{backend}: {}",
            r.stderr
        );
        assert_eq!(
            listing(&f.rootfs()),
            before,
            "{backend} changed the stored template"
        );
        let receipt = f.cli(&[
            "receipt",
            "--backend",
            backend,
            "--data-dir",
            &f.data,
            "--template",
            "mini",
            "--workspace",
            "none",
            "--json",
        ]);
        assert_eq!(receipt.code, 0, "{backend}: {}", receipt.stderr);
        assert!(
            receipt.stdout.contains(&f.digest()),
            "{backend}: {}",
            receipt.stdout
        );
    }
}

#[test]
fn two_boxes_on_one_template_do_not_see_each_others_writes_and_writes_vanish_with_the_box() {
    let f = Fixture::new("tpl-iso");
    let before = listing(&f.rootfs());
    let ws = f.dir.join("ws").display().to_string();
    let flags = ["--workspace", &ws, "--changes", "direct"];
    let ws_in = &ws;
    // Box A writes into the template's dirs, says so, and waits for box B.
    let a_script = format!(
        "echo A > /usr/bin/mark && echo A > /etc/motd && touch {ws_in}/a-wrote && i=0; while [ ! -e {ws_in}/b-done ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat /usr/bin/mark"
    );
    let mut args: Vec<String> = vec![
        "run".into(),
        "--data-dir".into(),
        f.data.clone(),
        "--template".into(),
        "mini".into(),
    ];
    args.extend(flags.iter().map(|s| s.to_string()));
    args.extend(["--".into(), "sh".into(), "-c".into(), a_script]);
    let a = std::process::Command::new(common::airlock_bin())
        .args(&args)
        .current_dir(f.dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let wrote = f.dir.join("ws/a-wrote");
    for _ in 0..400 {
        if wrote.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(wrote.exists(), "box A did not start");
    let b = f.run(
        &flags,
        &format!("cat /usr/bin/mark 2>&1; cat /etc/motd; touch {ws_in}/b-done"),
    );
    assert_eq!(b.code, 0, "{}", b.stderr);
    assert!(
        b.stdout.contains("No such file"),
        "box B sees box A's file: {}",
        b.stdout
    );
    assert!(
        b.stdout.contains("from the template"),
        "box B sees box A's /etc/motd: {}",
        b.stdout
    );
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(String::from_utf8_lossy(&a.stdout), "A\n");
    // Gone with the box: a new box sees the template as it was, and the tree is unchanged.
    let c = f.run(
        &["--workspace", "none"],
        "cat /usr/bin/mark 2>&1; cat /etc/motd",
    );
    assert!(
        c.stdout.contains("No such file") && c.stdout.contains("from the template"),
        "{}",
        c.stdout
    );
    assert_eq!(listing(&f.rootfs()), before);
}

#[test]
fn writes_to_the_template_root_count_against_the_disk_cap() {
    let f = Fixture::new("tpl-disk");
    let r = f.run(
        &["--workspace", "none", "--disk", "4M"],
        "dd if=/dev/zero of=/usr/big bs=1M count=16 2>&1; echo rc=$?",
    );
    assert!(r.stdout.contains("No space left"), "{}", r.stdout);
    assert!(r.stdout.contains("rc=1"), "{}", r.stdout);
    assert!(!f.rootfs().join("usr/big").exists());
}

#[test]
fn a_template_a_running_box_uses_cannot_be_removed() {
    let f = Fixture::new("tpl-rm");
    let ws = f.dir.join("ws").display().to_string();
    let script = format!("touch {ws}/started; sleep 2");
    let args = [
        "run",
        "--data-dir",
        &f.data,
        "--template",
        "mini",
        "--workspace",
        &ws,
        "--changes",
        "direct",
        "--",
        "sh",
        "-c",
        &script,
    ];
    let mut child = std::process::Command::new(common::airlock_bin())
        .args(args)
        .current_dir(f.dir.path())
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = f.dir.join("ws/started");
    for _ in 0..400 {
        if started.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(started.exists(), "the box did not start");
    let rm = f.cli(&["template", "rm", "--data-dir", &f.data, "mini"]);
    assert_eq!(rm.code, 125, "{}", rm.stdout);
    assert!(
        rm.stderr.contains("in use by a running box"),
        "{}",
        rm.stderr
    );
    assert!(f.rootfs().join("usr/bin/sh").exists());
    assert!(child.wait().unwrap().success());
    let rm = f.cli(&["template", "rm", "--data-dir", &f.data, "mini"]);
    assert_eq!(rm.code, 0, "{}", rm.stderr);
    let ls = f.cli(&["template", "ls", "--data-dir", &f.data]);
    assert_eq!(ls.stdout, "");
    let run = f.run(&["--workspace", "none"], "true");
    assert_eq!(run.code, 125);
    assert!(
        run.stderr.contains("no template named \"mini\""),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_template_is_refused_naming_the_ones_that_exist() {
    let f = Fixture::new("tpl-unknown");
    let r = f.cli(&[
        "run",
        "--data-dir",
        &f.data,
        "--template",
        "nope",
        "--workspace",
        "none",
        "--",
        "true",
    ]);
    assert_eq!(r.code, 125);
    assert!(
        r.stderr.contains("\"nope\"") && r.stderr.contains("mini"),
        "{}",
        r.stderr
    );
}

/// A victim directory outside /tmp (the box's setup mounts its scratch over /tmp, which would
/// hide a redirection there instead of showing it).
fn victim_dir(tag: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("victim-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("home/user")).unwrap();
    std::fs::write(d.join("keep"), "untouched").unwrap();
    d
}

#[test]
fn a_hostile_template_cannot_redirect_the_box_setup_onto_the_host() {
    // Every top-level path the box's setup writes or mounts on, pointed at the host's victim.
    setup_is_not_redirected("hostile", |tree, victim| {
        std::fs::remove_dir_all(tree.join("etc")).unwrap();
        for name in ["etc", "tmp", "dev", "proc", "home", ".airlock", "workspace"] {
            std::os::unix::fs::symlink(victim, tree.join(name)).unwrap();
        }
    });
}

#[test]
fn a_template_with_symlinks_below_real_directories_cannot_redirect_the_box_setup() {
    // Real directories on the way (which the setup checks once per root and then trusts),
    // with symlinks one level down: files it writes, mount points of the box's home, /dev
    // nodes and /dev/shm, and a file inside a symlinked directory.
    setup_is_not_redirected("nested", |tree, victim| {
        let v = Path::new(victim);
        std::fs::create_dir_all(tree.join("home")).unwrap();
        std::fs::create_dir_all(tree.join("dev")).unwrap();
        for (link, to) in [
            ("etc/passwd", v.join("keep")),
            ("etc/hosts", v.join("hosts")),
            ("etc/ssl", v.to_path_buf()),
            ("home/user", v.join("home/user")),
            ("dev/shm", v.to_path_buf()),
            ("dev/null", v.join("null")),
        ] {
            let _ = std::fs::remove_file(tree.join(link));
            std::os::unix::fs::symlink(to, tree.join(link)).unwrap();
        }
    });
}

/// Imports a template whose tree `plant` has given symlinks into the victim directory (its
/// path is the second argument), runs a box on it that reads and writes where the setup made
/// things, and checks that the box ran and that the victim directory is exactly as it was.
fn setup_is_not_redirected(tag: &str, plant: impl Fn(&Path, &str)) {
    let dir = TempDir::new(&format!("tpl-{tag}"));
    let victim = victim_dir(tag);
    let tree = dir.join("tree");
    make_tree(&tree, &["sh", "cat", "ls"]);
    plant(&tree, &victim.display().to_string());
    oci_from_tree(&tree, &dir.join("image"), &[], "/");
    let before = listing(&victim);
    let data = dir.join("data").display().to_string();
    let image = dir.join("image").display().to_string();
    let r = airlock(
        dir.path(),
        &[
            "template",
            "import",
            "--data-dir",
            &data,
            "--name",
            tag,
            &image,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws_arg = format!("{}:/workspace", ws.display());
    let r = airlock(
        dir.path(),
        &["run", "--data-dir", &data, "--template", tag, "--workspace", &ws_arg, "--", "sh", "-c",
          "cat /etc/passwd; ls /etc; ls -a /tmp /home /dev/shm; cat /keep 2>&1; echo x > /tmp/t && \
           echo y > /dev/shm/s && echo z > /home/user/h && echo n > /dev/null && echo wrote"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("user:x:1000"), "{}", r.stdout);
    assert!(r.stdout.contains("wrote"), "{}", r.stdout);
    assert_eq!(
        listing(&victim),
        before,
        "the box's setup wrote through the template's symlinks"
    );
    let _ = std::fs::remove_dir_all(&victim);
}

/// `bin ARGS` run in `cwd` as the unprivileged test user with `env`: its exit code, stdout
/// and stderr.
fn as_test_user(
    bin: &Path,
    cwd: &Path,
    env: &[(&str, &std::ffi::OsStr)],
    args: &[&str],
) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    let (uid, gid, _) = common::ensure_test_user();
    let out = std::process::Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .uid(uid)
        .gid(gid)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unprivileged_user_imports_and_runs_a_template() {
    let (uid, gid, home) = common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("tpl-user-bin");
    let dir = TempDir::new("tpl-user");
    make_tree(&dir.join("tree"), PROGRAMS);
    oci_from_tree(&dir.join("tree"), &dir.join("image"), &["TPL=user"], "/srv");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    for p in [dir.path().to_path_buf(), data.clone()] {
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    }
    let run_as_user = |args: &[&str]| {
        as_test_user(
            &bin,
            dir.path(),
            &[("HOME", home.as_ref()), ("XDG_DATA_HOME", data.as_os_str())],
            args,
        )
    };
    let image = dir.join("image").display().to_string();
    let (code, _, err) = run_as_user(&["template", "import", "--name", "mini", &image]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_as_user(&[
        "run",
        "--template",
        "mini",
        "--workspace",
        "none",
        "--",
        "sh",
        "-c",
        "echo $TPL; cat /etc/motd; echo w > /usr/bin/w && cat /usr/bin/w",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "user\nfrom the template\nw\n");
    // The store is the user's own.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(data.join("airlock/templates"))
            .unwrap()
            .uid(),
        uid
    );
}

/// A spec built by an unprivileged user: mmdebstrap in its rootless mode (`--mode=unshare`, the
/// user's subordinate ids), the build commands in a box as that user, then a box on the result;
/// the store is the user's own. The Debian base is kept under target/ across runs.
#[test]
fn an_unprivileged_user_builds_a_spec_rootless_and_runs_it() {
    use std::os::unix::fs::MetadataExt;
    let (uid, gid, home) = common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("tpl-build-user-bin");
    let dir = TempDir::new("tpl-build-user");
    let data = Path::new(env!("CARGO_TARGET_TMPDIR")).join("template-build-store-user");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(dir.join("motd"), "built rootless\n").unwrap();
    std::fs::write(
        dir.join("spec.toml"),
        r#"name = "rootless"
[debian]
suite = "bookworm"
packages = []
[[files]]
source = "motd"
target = "/etc/motd"
[build]
run = ["id -u > /etc/builder-uid", "rm /usr/bin/tail", "airlock_as_root sh -c 'id -u > /etc/root-uid; grep ^CapEff /proc/self/status >> /etc/root-uid'"]
"#,
    )
    .unwrap();
    for p in [dir.path().to_path_buf(), data.clone()] {
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    }
    let data_s = data.display().to_string();
    let run_as_user =
        |args: &[&str]| as_test_user(&bin, dir.path(), &[("HOME", home.as_ref())], args);
    let (code, out, err) = run_as_user(&["template", "build", "--data-dir", &data_s, "spec.toml"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("built rootless sha256:") || out.starts_with("cached rootless sha256:"),
        "{out}"
    );
    let (code, out, err) = run_as_user(&[
        "run",
        "--data-dir",
        &data_s,
        "--template",
        "rootless",
        "--workspace",
        "none",
        "--",
        "sh",
        "-c",
        "cat /etc/motd /etc/builder-uid /etc/debian_version; test -e /usr/bin/tail || echo no-tail; cat /etc/root-uid",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    // A build command as the build box's root (`airlock_as_root`): uid 0, no capability.
    assert_eq!(
        (lines[0], lines[1], lines[3], lines[4], lines[5]),
        (
            "built rootless",
            "1000",
            "no-tail",
            "0",
            "CapEff:\t0000000000000000"
        ),
        "{out}"
    );
    assert!(lines[2].starts_with("12."), "bookworm: {out}");
    // Everything in the store is the user's, and nothing is root's.
    for sub in ["templates", "templates/bases"] {
        assert_eq!(
            std::fs::metadata(data.join(sub)).unwrap().uid(),
            uid,
            "{sub}"
        );
    }
}

/// A spec build end to end: mmdebstrap's base (cached in the store by its packages), a file,
/// build commands run in a box whose only network is the proxy to the host's package indexes
/// (a listener on the host's loopback is never reached), the box's writes folded into the
/// template (a removal too), and the unchanged spec answered from the store in under a second.
#[test]
fn a_spec_builds_in_a_box_and_an_unchanged_spec_is_answered_from_the_cache() {
    let dir = TempDir::new("tpl-build");
    // Under target/: the Debian base is downloaded once and kept there across runs.
    let data = Path::new(env!("CARGO_TARGET_TMPDIR")).join("template-build-store");
    let data_s = data.display().to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(dir.join("motd"), "built by a spec\n").unwrap();
    let spec = format!(
        r#"name = "built"
[debian]
suite = "bookworm"
packages = ["python3"]
[[files]]
source = "motd"
target = "/etc/motd"
[build]
run = [
  "id -u > /etc/builder-uid",
  "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{port}/\", timeout=5)' && echo reached > /etc/net || echo refused > /etc/net",
  "rm /usr/bin/perl",
]
[defaults]
env = {{ BUILT = "yes" }}
"#
    );
    std::fs::write(dir.join("spec.toml"), spec).unwrap();
    let spec_path = dir.join("spec.toml").display().to_string();
    let build = |extra: &[&str]| {
        let mut args = vec!["template", "build", "--data-dir", &data_s];
        args.extend_from_slice(extra);
        args.push(&spec_path);
        let started = std::time::Instant::now();
        let r = airlock(dir.path(), &args);
        (r, started.elapsed())
    };
    let (first, _) = build(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stdout.starts_with("built built sha256:"),
        "{}",
        first.stdout
    );
    assert!(
        listener.accept().is_err(),
        "the build box reached the host's loopback"
    );
    let bases = || {
        std::fs::read_dir(data.join("templates/bases"))
            .unwrap()
            .count()
    };
    let bases_before = bases();
    let (second, took) = build(&[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stdout.starts_with("cached built sha256:"),
        "{}",
        second.stdout
    );
    assert!(
        took < std::time::Duration::from_secs(1),
        "a cached build took {took:?}"
    );
    assert_eq!(bases(), bases_before);
    assert_eq!(
        first.stdout.split_whitespace().nth(2),
        second.stdout.split_whitespace().nth(2)
    );
    let r = airlock(
        dir.path(),
        &["run", "--data-dir", &data_s, "--template", "built", "--workspace", "none", "--", "sh", "-c",
          "cat /etc/motd /etc/builder-uid /etc/net; echo $BUILT; test -e /usr/bin/perl && echo perl; python3 -c 'print(6*7)'"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "built by a spec\n1000\nrefused\nyes\n42\n");
}

/// A spec built on a stored template (`from`): the new template has the stored tree with the
/// spec's files and its build box's writes on top (a removal too) and inherits the stored
/// template's env and working directory under its own; the stored template is not changed; the
/// unchanged spec is answered from the cache until the template it builds on changes; a spec
/// with both bases, none, or an unknown one is refused naming what to do.
#[test]
fn a_spec_builds_on_a_stored_template_which_stays_as_it_was() {
    let f = Fixture::new("tpl-layer");
    let before = (f.digest(), listing(&f.rootfs()));
    std::fs::write(f.dir.join("note"), "a layered file\n").unwrap();
    let spec = |base: &str| {
        format!(
            r#"name = "layered"
{base}
[[files]]
source = "note"
target = "/srv/note"
[build]
run = ["echo built-on-top > /srv/built", "rm /etc/motd"]
[defaults]
env = {{ LAYER = "2" }}
"#
        )
    };
    let spec_path = f.dir.join("layered.toml");
    std::fs::write(&spec_path, spec(r#"from = "mini""#)).unwrap();
    let spec_s = spec_path.display().to_string();
    let build = || f.cli(&["template", "build", "--data-dir", &f.data, &spec_s]);
    let first = build();
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stdout.starts_with("built layered sha256:"),
        "{}",
        first.stdout
    );
    let on_layered = |script: &str| {
        f.cli(&[
            "run",
            "--data-dir",
            &f.data,
            "--template",
            "layered",
            "--workspace",
            "none",
            "--",
            "sh",
            "-c",
            script,
        ])
    };
    let r = on_layered(
        "cat /srv/note /srv/built; test -e /etc/motd && echo motd; echo $TPL $LAYER; pwd",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "a layered file\nbuilt-on-top\nyes 2\n/srv\n");
    assert_eq!(
        (f.digest(), listing(&f.rootfs())),
        before,
        "the template built on changed"
    );
    let again = build();
    assert!(
        again.code == 0 && again.stdout.starts_with("cached layered"),
        "{} {}",
        again.stdout,
        again.stderr
    );
    // The template built on changes: the layered spec builds again, on the new one.
    std::fs::write(f.dir.join("tree/etc/motd"), "a new motd\n").unwrap();
    std::fs::write(f.dir.join("tree/etc/v2"), "second\n").unwrap();
    let image2 = f.dir.join("image2");
    oci_from_tree(
        &f.dir.join("tree"),
        &image2,
        &["TPL=yes", "PATH=/usr/bin"],
        "/srv",
    );
    f.import_as_mini(&image2);
    let rebuilt = build();
    assert!(
        rebuilt.code == 0 && rebuilt.stdout.starts_with("built layered"),
        "{} {}",
        rebuilt.stdout,
        rebuilt.stderr
    );
    let r = on_layered("cat /etc/v2");
    assert_eq!((r.code, r.stdout.as_str()), (0, "second\n"), "{}", r.stderr);

    for (base, says) in [
        (
            "from = \"mini\"\n[debian]\nsuite = \"bookworm\"",
            "give either [debian] (a new base) or `from`",
        ),
        ("", "give a base: a [debian] section"),
        (
            "from = \"never-stored\"",
            "no template named \"never-stored\"",
        ),
        ("from = \"host\"", "`host` is no tree to build on"),
    ] {
        std::fs::write(&spec_path, spec(base)).unwrap();
        let r = build();
        assert!(
            r.code != 0 && r.stderr.contains(says),
            "{base:?}: {} {}",
            r.code,
            r.stderr
        );
    }
    assert!(
        !f.cli(&["template", "ls", "--data-dir", &f.data])
            .stdout
            .contains("never-stored"),
        "a refused build left a template"
    );
}

#[test]
fn a_template_lookup_creates_nothing_and_names_what_exists() {
    let f = Fixture::new("tpl-lookup");
    let lookup = |data: &str| {
        f.cli(&[
            "run",
            "--data-dir",
            data,
            "--template",
            "nosuch",
            "--",
            "true",
        ])
    };
    // A mistyped data dir: the lookup fails with the store's answer, and makes no directory.
    let missing = f.dir.join("no/such/data").display().to_string();
    let r = lookup(&missing);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("no template named \"nosuch\""),
        "{}",
        r.stderr
    );
    assert!(
        !f.dir.join("no").exists(),
        "the lookup made the data dir's path"
    );
    // The fixture's store: an unknown name lists the one there, and nothing is added.
    let before = listing(Path::new(&f.data));
    let r = lookup(&f.data);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("mini"), "{}", r.stderr);
    assert_eq!(listing(Path::new(&f.data)), before);
}
