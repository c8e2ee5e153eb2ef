//! The gVisor backend against a real runsc (Debian's `runsc`; `scripts/test.sh` installs it):
//! the agent contract in a gVisor box, its receipt, its network door, pause/resume, an image
//! template, and that nothing is left behind after a kill or a SIGKILL of airlock. A machine
//! without runsc fails these tests (the start's error says what is missing); it never skips.
#![allow(clippy::unwrap_used)]

mod common;

use airlock_gvisor::{GvisorBackend, GvisorConfig};
use airlock_policy::{resolve, BackendKind, NetworkMode, PolicyFile, ResolveContext};
use airlock_runtime::backend::{
    ImageTemplate, NetDecision, NetworkEvent, NetworkSink, StartOptions, Template, TemplateDefaults,
};
use airlock_runtime::{LiveSandbox, RealHost};
use common::{airlock_bin, TempDir};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn policy_for(ws: &Path, edit: impl FnOnce(&mut PolicyFile)) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(BackendKind::Gvisor),
        ..Default::default()
    };
    file.filesystem.changes = Some(airlock_policy::ChangesMode::Direct);
    edit(&mut file);
    resolve(
        &file,
        &ResolveContext {
            cwd: ws.to_path_buf(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap()
}

/// The runsc the suite runs on: `AIRLOCK_RUNSC` (scripts/test.sh sets it to the current runsc
/// that scripts/gvisor-runsc.sh fetches), else runsc on PATH.
fn backend() -> GvisorBackend {
    GvisorBackend::new(airlock_bin(), airlock_backends::gvisor_from_env())
}

/// The runsc [`backend`] uses, as it finds it.
fn current_runsc() -> airlock_gvisor::Runsc {
    airlock_gvisor::Runsc::find(airlock_backends::gvisor_from_env().runsc.as_deref(), None)
        .unwrap_or_else(|e| panic!("runsc must be here (scripts/gvisor-runsc.sh): {e}"))
}

/// Debian bookworm's runsc, which a user may have as their only one: it has no systrap and
/// cannot restore an airlock box, and the backend must see both from what it is.
const BOOKWORM_RUNSC: &str = "/usr/bin/runsc";

fn bookworm_backend() -> (GvisorBackend, airlock_gvisor::Runsc) {
    let path = Path::new(BOOKWORM_RUNSC);
    let runsc = airlock_gvisor::Runsc::find(Some(path), None).unwrap_or_else(|e| {
        panic!("Debian's runsc must be installed (apt-get install runsc): {e}")
    });
    assert!(
        runsc.version.contains("20221219"),
        "{BOOKWORM_RUNSC} is not bookworm's runsc 0.0~20221219: {}",
        runsc.version
    );
    let config = GvisorConfig {
        runsc: Some(path.to_path_buf()),
        platform: None,
    };
    (GvisorBackend::new(airlock_bin(), config), runsc)
}

fn start(ws: &Path, edit: impl FnOnce(&mut PolicyFile), template: &Template) -> LiveSandbox {
    start_with(ws, edit, template, &StartOptions::default())
}

fn start_with(
    ws: &Path,
    edit: impl FnOnce(&mut PolicyFile),
    template: &Template,
    opts: &StartOptions,
) -> LiveSandbox {
    match LiveSandbox::start(&backend(), &policy_for(ws, edit), template, opts) {
        Ok(s) => s,
        Err(e) => {
            panic!("a gVisor box must start here (is runsc installed? apt-get install runsc): {e}")
        }
    }
}

fn sh(s: &mut LiveSandbox, script: &str) -> (i32, String, String) {
    let out = s
        .channel()
        .exec(
            &["sh", "-c", script],
            &[],
            None,
            Some(Duration::from_secs(30)),
            1 << 20,
        )
        .unwrap();
    (
        out.exit_code.unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The gvisor-host processes that are children of this test process, and all they started.
fn box_processes() -> Vec<i32> {
    let me = std::process::id() as i32;
    let hosts: Vec<i32> = common::children(me)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("gvisor-host"))
        })
        .collect();
    common::descendants(&hosts)
}

#[test]
fn the_agent_serves_a_gvisor_box_as_uid_1000_under_the_sentry() {
    let ws = TempDir::new("gv-contract");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let mut s = start(ws.path(), |_| {}, &Template::Host);
    let receipt = s.receipt().unwrap().clone();
    let kernel = receipt.layers.iter().find(|l| l.layer == "kernel").unwrap();
    let platform = format!("platform {}", current_runsc().platform);
    assert!(
        kernel.mechanism.contains("gVisor") && kernel.mechanism.contains(&platform),
        "{kernel:?} (want {platform})"
    );
    assert_eq!(s.ended(), None);
    // The Sentry answers uname: not the host kernel's release.
    let (code, out, err) = sh(
        &mut s,
        "id -u; uname -r; cat /proc/self/status | grep CapEff",
    );
    assert_eq!(code, 0, "{err}");
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1000");
    assert_ne!(
        lines[1],
        host_release.trim(),
        "uname must come from gVisor's kernel"
    );
    assert!(lines[2].ends_with("0000000000000000"), "{out}");
    // stdin reaches the command; its output comes back.
    let out = s
        .channel()
        .exec(&["cat"], &[], Some(b"through the agent"), None, 1 << 16)
        .unwrap();
    assert_eq!(out.stdout, b"through the agent");
    // Files: written inside, they are on the host, owned by whoever ran airlock.
    let path = ws.join("data.bin");
    let data = vec![7u8; 300_000];
    s.channel()
        .write_file(path.to_str().unwrap(), &data)
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), data);
    let (code, _, err) = sh(&mut s, "echo from-box > made.txt");
    assert_eq!(code, 0, "{err}");
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    assert_eq!(std::fs::metadata(ws.join("made.txt")).unwrap().uid(), me);
    assert_eq!(s.channel().read_file(path.to_str().unwrap()).unwrap(), data);
    // A protected file that exists stays read-only, and the host copy is unchanged.
    let (code, _, _) = sh(&mut s, "echo '[core] hooksPath=/tmp' >> .git/config");
    assert_ne!(code, 0, "the box wrote a protected file");
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // Nothing of the host beyond the system dirs: the host's /root is not there (the box's
    // /root is its own, empty), no host /proc.
    // (`test -e`, not `ls`: Debian's 2022 runsc refuses statx with AT_NO_AUTOMOUNT, which
    // coreutils' ls and stat use; a current gVisor accepts it.)
    let (_, out, _) = sh(
        &mut s,
        "for f in /root/* /root/.[!.]* /root/..?*; do test -e \"$f\" && echo \"host: $f\"; done; echo root-empty; cat /proc/1/cmdline | tr '\\0' ' '",
    );
    assert!(out.starts_with("root-empty"), "{out}");
    assert!(out.contains("/.airlock/agent"), "PID 1 is the agent: {out}");
    let usage = s.usage().unwrap();
    assert!(usage.memory_bytes.is_some_and(|m| m > 0), "{usage:?}");
    s.kill();
}

#[test]
fn pause_stops_the_box_and_resume_continues_it() {
    let ws = TempDir::new("gv-pause");
    let mut s = start(ws.path(), |_| {}, &Template::Host);
    assert!(s.capabilities().pause);
    let (code, _, err) = sh(
        &mut s,
        "(while :; do date +%s%N >> ticks; sleep 0.05; done) >/dev/null 2>&1 &",
    );
    assert_eq!(code, 0, "{err}");
    std::thread::sleep(Duration::from_millis(400));
    s.pause().unwrap();
    let before = std::fs::read_to_string(ws.join("ticks"))
        .unwrap()
        .lines()
        .count();
    std::thread::sleep(Duration::from_millis(600));
    let during = std::fs::read_to_string(ws.join("ticks"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(before, during, "a paused box kept running");
    s.resume().unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let after = std::fs::read_to_string(ws.join("ticks"))
        .unwrap()
        .lines()
        .count();
    assert!(after > during, "the box did not continue after resume");
    let (code, out, _) = sh(&mut s, "echo alive");
    assert_eq!((code, out.as_str()), (0, "alive\n"));
    s.kill();
}

#[derive(Default)]
struct Events(Mutex<Vec<NetworkEvent>>);

impl NetworkSink for Events {
    fn network_event(&self, event: NetworkEvent) {
        self.0.lock().unwrap().push(event);
    }
}

#[test]
fn a_proxied_gvisor_box_reaches_only_the_proxy_and_every_decision_is_typed() {
    let ws = TempDir::new("gv-proxy");
    // A listener on the host's own loopback that the box must not reach directly.
    let host_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = host_listener.local_addr().unwrap().port();
    let events = Arc::new(Events::default());
    let opts = StartOptions {
        network_events: Some(events.clone()),
        audit_file: None,
        ..Default::default()
    };
    let mut s = start_with(
        ws.path(),
        |f| {
            f.network.mode = Some(NetworkMode::Proxy);
            f.network.allow_domain = vec!["allowed.invalid".into()];
        },
        &Template::Host,
        &opts,
    );
    // Direct: the host's loopback is not the box's loopback.
    let script = format!(
        "python3 -c \"import socket; s=socket.socket(); s.settimeout(3); s.connect(('127.0.0.1', {port})); print('connected')\""
    );
    let (code, out, err) = sh(&mut s, &script);
    assert!(
        code != 0 && !out.contains("connected"),
        "the box reached the host's loopback: {out} {err}"
    );
    // Through the proxy: a name outside the allowlist is refused, and the refusal is an event.
    let (_, out, _) = sh(
        &mut s,
        "curl -s -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3128 http://denied.invalid/",
    );
    assert_eq!(
        out, "403",
        "the proxy must refuse a name outside the allowlist"
    );
    s.flush_network_events().unwrap();
    let got = events.0.lock().unwrap().clone();
    assert!(
        got.iter()
            .any(|e| e.host == "denied.invalid" && e.decision == NetDecision::Deny),
        "{got:?}"
    );
    assert!(s.capabilities().live_egress);
    s.kill();
    // Nothing reached the host listener.
    host_listener.set_nonblocking(true).unwrap();
    assert!(host_listener.accept().is_err());
}

/// A tiny root: the host's dash and the libraries it needs, nothing else.
fn tiny_image(dir: &Path) -> Template {
    let root = dir.join("rootfs");
    for d in ["bin", "lib/x86_64-linux-gnu", "lib64", "tmp", "etc"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::copy("/usr/bin/dash", root.join("bin/sh")).unwrap();
    std::fs::copy(
        "/lib/x86_64-linux-gnu/libc.so.6",
        root.join("lib/x86_64-linux-gnu/libc.so.6"),
    )
    .unwrap();
    std::fs::copy(
        "/lib64/ld-linux-x86-64.so.2",
        root.join("lib64/ld-linux-x86-64.so.2"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    // Stored as its owner's (the test's), as a stored template is root's: the box shows them as
    // the box user's, through an idmapped lower layer.
    std::fs::write(root.join("data/marker"), "tiny\n").unwrap();
    Template::Image(ImageTemplate {
        name: "tiny".into(),
        digest: "sha256:test".into(),
        rootfs: root,
        defaults: TemplateDefaults::default(),
    })
}

#[test]
fn an_image_template_is_the_root_read_only_under_a_capped_writable_layer() {
    let ws = TempDir::new("gv-image");
    let img = TempDir::new("gv-image-root");
    let template = tiny_image(img.path());
    let mut s = start(
        ws.path(),
        |f| f.limits.disk = Some(airlock_policy::SizeValue(4 << 20)),
        &template,
    );
    let (code, out, err) = sh(
        &mut s,
        "test -O / && test -G / && test -O /data/marker && echo the-box-users; read a < /data/marker; echo changed > /data/marker; \
         read b < /data/marker; echo $a $b; test -e /usr/bin/python3 && echo host-python; exit 0",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out, "the-box-users\ntiny changed\n",
        "the image is the root, the box user's, writable through its layer only"
    );
    assert_eq!(
        std::fs::read_to_string(img.join("rootfs/data/marker")).unwrap(),
        "tiny\n",
        "the image itself is unchanged"
    );
    // The layer is capped by --disk (4 MiB): a 6 MiB write fails, and none of it is in the image.
    let (code, _, _) = sh(
        &mut s,
        "i=0; while [ $i -lt 96 ]; do printf '%65536s' x >> /data/big || exit 7; i=$((i+1)); done",
    );
    assert_eq!(code, 7, "the writable layer is not capped by --disk");
    assert!(
        std::fs::metadata(img.join("rootfs/data/big")).is_err(),
        "the layer wrote into the image"
    );
    s.kill();
}

#[test]
fn kill_leaves_no_process_mount_or_cgroup() {
    let ws = TempDir::new("gv-kill");
    let mut s = start(
        ws.path(),
        |f| f.limits.memory = Some(airlock_policy::SizeValue(512 << 20)),
        &Template::Host,
    );
    let (code, _, _) = sh(&mut s, "sleep 1000 > /dev/null 2>&1 &");
    assert_eq!(code, 0);
    let procs = box_processes();
    assert!(
        procs.len() >= 3,
        "runsc, its gofer and sandbox run: {procs:?}"
    );
    s.kill();
    let deadline = Instant::now() + Duration::from_secs(10);
    while procs.iter().any(|p| common::alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            procs
                .iter()
                .filter(|p| common::alive(**p))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !common::host_mounts().contains("/run/airlock-gvisor"),
        "a mount was left behind"
    );
}

#[test]
fn an_unprivileged_user_is_told_why_gvisor_needs_root_and_what_to_use() {
    assert!(
        common::is_root(),
        "this test runs airlock as the test user and must start as root"
    );
    common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("gv-unpriv-bin");
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            common::TEST_USER,
            "--regid",
            common::TEST_USER,
            "--init-groups",
            "--",
        ])
        .arg(&bin)
        .args(["check", "--json"])
        .current_dir("/")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gv = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "gvisor")
        .unwrap()
        .clone();
    assert_eq!(gv["status"], "unavailable", "{gv}");
    let why = gv["why"].as_str().unwrap();
    assert!(
        why.contains("needs root") && why.contains("--backend native"),
        "{why}"
    );

    // A server whose default is gVisor does not start for this user; it says why.
    let err = common::serve_refused_as_test_user(&bin, &["--backend", "gvisor"]);
    assert!(err.contains("needs root"), "{err}");
    // A native server run by this user answers a request for a gVisor box as the client's
    // mistake (400, naming the field), not as a box that failed to start (500).
    let (uid, gid, _) = common::ensure_test_user();
    let data = TempDir::new("gv-unpriv-serve-native");
    std::os::unix::fs::chown(data.path(), Some(uid), Some(gid)).unwrap();
    let serve =
        common::ServeProcess::start_as_test_user(&bin, data.path(), &["--backend", "native"]);
    let key = serve.printed_key.clone().expect("api key");
    let resp = ureq::post(&format!("{}/v1/sandboxes", serve.base))
        .set("Authorization", &format!("Bearer {key}"))
        .set("Content-Type", "application/json")
        .send_string(r#"{"backend": "gvisor"}"#);
    let Err(ureq::Error::Status(status, resp)) = resp else {
        panic!("a gVisor box was made for an unprivileged server: {resp:?}");
    };
    let body: serde_json::Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        status == 400 && body["error"]["code"] == "invalid" && message.contains("needs root"),
        "{status} {body}"
    );
}

#[test]
fn ls_and_stat_work_in_a_gvisor_box_under_either_runsc() {
    // Debian's 2022 runsc answers EINVAL to the AT_NO_AUTOMOUNT flag coreutils pass to statx
    // (and to fstatat, glibc's fallback); under it each command preloads airlock's shim that
    // drops the flag. A current runsc accepts the flag, and its commands get no statx shim
    // (both get the xattr one, checked at the end).
    let ws = TempDir::new("gv-stat");
    std::fs::write(ws.join("file.txt"), "hello").unwrap();
    let current = current_runsc();
    let (old, old_runsc) = bookworm_backend();
    for (backend, runsc) in [(backend(), current), (old, old_runsc)] {
        let policy = policy_for(ws.path(), |_| {});
        let mut s = LiveSandbox::start(&backend, &policy, &Template::Host, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", runsc.version));
        let (code, out, err) = sh(
            &mut s,
            "ls -l / >/dev/null && echo ls-ok; stat -c 'stat %s %n' file.txt; ls -l file.txt",
        );
        assert_eq!(code, 0, "{}: {out}{err}", runsc.version);
        assert!(out.contains("ls-ok"), "{out}{err}");
        assert!(out.contains("stat 5 file.txt"), "{out}{err}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("-rw") && l.ends_with(" file.txt")),
            "{out}"
        );
        let (_, preload, _) = sh(&mut s, "echo \"$LD_PRELOAD\"");
        assert_eq!(
            preload.contains("statx-compat"),
            runsc.needs_statx_shim(),
            "{}: LD_PRELOAD={preload}",
            runsc.version
        );
        // The same stat without the shim: the old runsc refuses the flag, the current accepts.
        let (code, out, err) = sh(&mut s, "env -u LD_PRELOAD stat -c 'stat %s' file.txt");
        if runsc.needs_statx_shim() {
            assert!(
                err.contains("Invalid argument"),
                "{}: {code} {out}{err}",
                runsc.version
            );
        } else {
            assert_eq!(
                (code, out.as_str()),
                (0, "stat 5\n"),
                "{}: {err}",
                runsc.version
            );
        }
        // gVisor #11049: lgetxattr on a symlink answers EBADF in the current release, so
        // `ls -l` of a link (the root's /bin is one) printed "Bad file descriptor"; the xattr
        // shim turns it into ENODATA. Without it, the bug shows there (Debian's 2022 release
        // does not have it: the shim is loaded there too, and never acts).
        let (_, preload, _) = sh(&mut s, "echo \"$LD_PRELOAD\"");
        assert!(
            preload.contains("xattr-compat"),
            "{}: {preload}",
            runsc.version
        );
        let (code, out, err) = sh(&mut s, "ls -l /bin /usr/bin/awk");
        assert_eq!((code, err.as_str()), (0, ""), "{}: {out}", runsc.version);
        assert!(out.contains("/bin -> usr/bin"), "{}: {out}", runsc.version);
        // Without the xattr shim only (the old runsc keeps its statx one).
        let statx_only = match runsc.needs_statx_shim() {
            true => airlock_gvisor::compat::STATX_COMPAT_INSIDE,
            false => "",
        };
        let (_, _, err) = sh(&mut s, &format!("LD_PRELOAD={statx_only} ls -l /bin"));
        assert!(
            runsc.release().is_some_and(|r| r < 20240729) || err.contains("Bad file descriptor"),
            "{}: the bug the shim works around is gone; update XATTR_BUG_UNTIL: {err}",
            runsc.version
        );
        s.kill();
    }
}

#[test]
fn bookworms_runsc_refuses_a_checkpoint_saying_why_it_cannot_restore() {
    // runsc checkpoint works under bookworm's runsc, but in a box it restores every new path
    // lookup through a gofer mount fails with EINVAL: the capability says none, and both
    // halves refuse with the reason instead of writing a checkpoint nobody can use.
    use airlock_runtime::backend::{Backend, CheckpointOptions};
    let ws = TempDir::new("gv-ckpt");
    let store = TempDir::new("gv-ckpt-store");
    let (old, _) = bookworm_backend();
    let policy = policy_for(ws.path(), |_| {});
    let mut s = LiveSandbox::start(&old, &policy, &Template::Host, &Default::default()).unwrap();
    assert_eq!(s.capabilities().checkpoint, None);
    let dir = store.join("ck");
    std::fs::create_dir(&dir).unwrap();
    for then_stop in [false, true] {
        let err = s
            .checkpoint(&dir, &CheckpointOptions { then_stop })
            .expect_err("a checkpoint this runsc cannot restore was taken");
        assert!(err.to_string().contains("EINVAL"), "{err}");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "a refused checkpoint wrote files"
    );
    let (code, out, _) = sh(&mut s, "echo alive");
    assert_eq!((code, out.as_str()), (0, "alive\n"), "the box ended");
    s.kill();
    let err = old
        .restore(&dir, &policy, &Template::Host, &StartOptions::default())
        .err()
        .expect("a restore this runsc cannot do started");
    assert!(err.to_string().contains("runsc restore"), "{err}");
}

/// The box's counter loop (a shell variable in the Sentry's memory, written to the scratch
/// `/tmp` every 50 ms) and the last value it wrote.
fn counter(s: &mut LiveSandbox) -> u64 {
    // The loop truncates the file before each write: a read between the two sees it empty.
    for _ in 0..50 {
        let (code, out, err) = sh(s, "cat /tmp/counter");
        assert_eq!(code, 0, "{err}");
        if let Ok(n) = out.trim().parse() {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("/tmp/counter stayed empty: the counting process is gone");
}

/// Every file called `name` below `dir`.
fn files_named(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            found.extend(files_named(&e.path(), name));
        } else if e.file_name() == name {
            found.push(e.path());
        }
    }
    found
}

#[test]
fn a_checkpoint_restores_the_box_where_it_was_and_each_restore_has_its_own_files() {
    // Under a runsc that restores airlock boxes (scripts/gvisor-runsc.sh fetches one): a box
    // with a process counting in memory is checkpointed twice (running on, then ended), and
    // two boxes restored from the second continue the count from where it was, see the
    // scratch files of that moment, diverge from each other, and look up paths that were
    // never looked up before the checkpoint (bookworm's runsc fails exactly those).
    use airlock_runtime::backend::{Backend, CheckpointKind, CheckpointOptions};
    let runsc = current_runsc();
    assert_eq!(
        runsc.restore_gap(),
        None,
        "this suite needs a runsc that restores (AIRLOCK_RUNSC=$(scripts/gvisor-runsc.sh))"
    );
    let ws = TempDir::new("gv-restore");
    let store = TempDir::new("gv-restore-store");
    let before = box_processes();
    let mut s = start(ws.path(), |_| {}, &Template::Host);
    assert_eq!(s.capabilities().checkpoint, Some(CheckpointKind::Memory));
    let (code, _, err) = sh(
        &mut s,
        "echo kept > /tmp/note; (i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; \
         sleep 0.05; done) >/dev/null 2>&1 & sleep 0.3",
    );
    assert_eq!(code, 0, "{err}");
    // A checkpoint that lets the box run on: it answers, and the count goes on.
    let live = store.join("live");
    std::fs::create_dir(&live).unwrap();
    let taken = s
        .checkpoint(&live, &CheckpointOptions { then_stop: false })
        .unwrap();
    assert_eq!(taken.kind, CheckpointKind::Memory);
    assert_eq!(taken.mechanism, "runsc-checkpoint");
    let c0 = counter(&mut s);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        counter(&mut s) > c0,
        "the box did not run on after a checkpoint"
    );
    // The second one ends it.
    let ended = store.join("ended");
    std::fs::create_dir(&ended).unwrap();
    let at = counter(&mut s);
    s.checkpoint(&ended, &CheckpointOptions { then_stop: true })
        .unwrap();
    assert!(
        s.wait_ended(Duration::from_secs(10)).is_some(),
        "then_stop left the box running"
    );
    s.kill();
    // A file that appears in the workspace only now: a lookup the box never made.
    std::fs::write(ws.join("after.txt"), "new on the host").unwrap();
    let policy = policy_for(ws.path(), |_| {});
    let restore = || {
        let instance = backend()
            .restore(&ended, &policy, &Template::Host, &StartOptions::default())
            .unwrap_or_else(|e| panic!("the restore failed: {e}"));
        LiveSandbox::connect(instance).unwrap()
    };
    let mut a = restore();
    let mut b = restore();
    for (name, r) in [("a", &mut a), ("b", &mut b)] {
        let now = counter(r);
        assert!(
            now >= at,
            "{name}: the count restarted ({now} < {at}): memory was not kept"
        );
        let (code, out, err) = sh(
            r,
            "cat /tmp/note; cat after.txt; echo; ls /usr/share/doc | wc -l; ls -d /etc/ssl",
        );
        assert_eq!(
            code, 0,
            "{name}: a new lookup failed after the restore: {err}"
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..2], ["kept", "new on the host"], "{name}: {out}");
        assert!(lines[2].parse::<u32>().unwrap() > 0, "{name}: {out}");
        let (code, _, err) = sh(r, &format!("echo {name} > /tmp/note"));
        assert_eq!(code, 0, "{err}");
    }
    // Each restore has its own copy of the scratch: they diverge.
    for (name, r) in [("a", &mut a), ("b", &mut b)] {
        let (_, out, _) = sh(r, "cat /tmp/note");
        assert_eq!(out, format!("{name}\n"), "the restores share their files");
    }
    // The count goes on in both.
    let (ca, cb) = (counter(&mut a), counter(&mut b));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        counter(&mut a) > ca && counter(&mut b) > cb,
        "a restored process stopped"
    );
    a.kill();
    b.kill();
    // The checkpoint itself is untouched by its restores, and nothing of the boxes is left.
    let notes = files_named(&ended.join("files"), "note");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(std::fs::read_to_string(&notes[0]).unwrap(), "kept\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while box_processes().len() > before.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        box_processes(),
        before,
        "a restored box left processes behind"
    );
}
