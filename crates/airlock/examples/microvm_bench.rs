//! microVM figures (issue 16), each next to the native box in the same run: cold boot to a
//! greeted agent, restore from the template snapshot to the first command's output, host memory
//! per idle VM, and create → first exec through `airlock serve`'s API.
//! Run by `benches/microvm.sh` (release build; the guest from `scripts/microvm-guest.sh`).
//! Usage: microvm_bench AIRLOCK_BIN [WARM_RUNS] [pause]   (`pause`: only the pause figures)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use airlock_policy::{resolve, BackendKind, LimitsSection, PolicyFile, ResolveContext, SizeValue};
use airlock_runtime::backend::{Backend, StartOptions, Template};
use airlock_runtime::{LiveSandbox, RealHost};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn policy(kind: BackendKind, memory: Option<u64>) -> airlock_policy::ResolvedPolicy {
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some("none".into()),
        backend: Some(kind),
        limits: LimitsSection {
            memory: memory.map(SizeValue),
            ..Default::default()
        },
        ..Default::default()
    };
    let ctx = ResolveContext {
        cwd: "/".into(),
        env: &env,
        host: &RealHost,
    };
    resolve(&file, &ctx).unwrap()
}

/// Start → first output of `echo ok`, and the box (still running).
fn first_output(b: &dyn Backend, p: &airlock_policy::ResolvedPolicy) -> (Duration, LiveSandbox) {
    let t = Instant::now();
    let mut s = LiveSandbox::start(b, p, &Template::Host, &StartOptions::default()).unwrap();
    let out = s
        .channel()
        .exec(&["echo", "ok"], &[], None, None, 1 << 10)
        .unwrap();
    assert_eq!(out.stdout, b"ok\n");
    (t.elapsed(), s)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = PathBuf::from(
        args.get(1)
            .expect("usage: microvm_bench AIRLOCK_BIN [WARM_RUNS]"),
    );
    let runs: usize = args.get(2).map_or(20, |n| n.parse().unwrap());
    let backends = airlock_backends::built_in(&airlock_backends::BackendConfig::new(bin.clone()));
    let vm = backends.select(BackendKind::Microvm).unwrap();
    let native = backends.select(BackendKind::Native).unwrap();
    if args.get(3).map(String::as_str) == Some("pause") {
        pause(vm.as_ref());
        return;
    }
    let small = Some(512 << 20);
    let (pvm, pvm_default, pnat) = (
        policy(BackendKind::Microvm, small),
        policy(BackendKind::Microvm, None),
        policy(BackendKind::Native, None),
    );

    // Cold boots: a fresh cache each time (no template snapshot to restore).
    let mut cold = Vec::new();
    for i in 0..3 {
        let cache = std::env::temp_dir().join(format!("mvm-bench-cold-{}-{i}", std::process::id()));
        std::env::set_var("AIRLOCK_MICROVM_CACHE", &cache);
        let (_, s) = first_output(vm.as_ref(), &pvm);
        let start = s
            .receipt()
            .unwrap()
            .layers
            .iter()
            .find(|l| l.layer == "start")
            .unwrap()
            .mechanism
            .clone();
        // "cold boot to the init in N ms": QEMU start to the init waiting for its config.
        let n: f64 = start
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap();
        cold.push(n);
        s.kill();
        let _ = std::fs::remove_dir_all(&cache);
    }
    std::env::remove_var("AIRLOCK_MICROVM_CACHE");
    println!(
        "cold boot to the init waiting for its config (TCG, 512 MiB): median {:.0} ms of {cold:?}",
        median(cold.clone())
    );

    for (label, p) in [
        ("512 MiB", &pvm),
        ("4 GiB (the default limit)", &pvm_default),
    ] {
        first_output(vm.as_ref(), p).1.kill(); // makes the template snapshot
        let mut warm = Vec::new();
        let mut nat = Vec::new();
        for _ in 0..runs {
            let (d, s) = first_output(vm.as_ref(), p);
            warm.push(ms(d));
            s.kill();
            let (d, s) = first_output(native.as_ref(), &pnat);
            nat.push(ms(d));
            s.kill();
        }
        let (w, n) = (median(warm), median(nat));
        println!("restore → first output, {label}: median {w:.0} ms; native start → first output {n:.0} ms; ratio {:.1}×", w / n);
    }

    // Host memory of idle VMs (QEMU's resident set, after 3 s idle).
    let mut rss = Vec::new();
    let mut boxes = Vec::new();
    for _ in 0..3 {
        let (_, s) = first_output(vm.as_ref(), &pvm);
        boxes.push(s);
    }
    std::thread::sleep(Duration::from_secs(3));
    for s in &mut boxes {
        rss.push(s.usage().unwrap().memory_bytes.unwrap() as f64 / (1 << 20) as f64);
    }
    let (_, mut n) = first_output(native.as_ref(), &pnat);
    let nat_mem = n.usage().unwrap().memory_bytes.unwrap_or(0) as f64 / (1 << 20) as f64;
    n.kill();
    for s in boxes {
        s.kill();
    }
    println!("host memory per idle VM (512 MiB guest, QEMU RSS): {rss:.1?} MiB; a native box's cgroup: {nat_mem:.1} MiB");

    pause(vm.as_ref());
    api(&bin, runs);
}

/// A pause (checkpoint with `then_stop`) of a box holding 256 MiB of incompressible data in
/// its memory (/tmp is guest RAM): how long the save takes and how big it is, next to the host
/// copying a 256 MiB file of the same data (the peer: the least any save must write), and the
/// restore of that checkpoint to the first output.
fn pause(vm: &dyn Backend) {
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some("none".into()),
        backend: Some(BackendKind::Microvm),
        limits: LimitsSection {
            memory: Some(SizeValue(1 << 30)),
            disk: Some(SizeValue(400 << 20)),
            ..Default::default()
        },
        ..Default::default()
    };
    let ctx = ResolveContext {
        cwd: "/".into(),
        env: &env,
        host: &RealHost,
    };
    let p = resolve(&file, &ctx).unwrap();
    let (_, mut s) = first_output(vm, &p);
    let out = s
        .channel()
        .exec(
            &[
                "sh",
                "-c",
                "head -c 268435456 /dev/urandom > /tmp/fill && wc -c < /tmp/fill",
            ],
            &[],
            None,
            None,
            1 << 10,
        )
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "268435456");
    let dir = std::env::temp_dir().join(format!("mvm-bench-pause-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = Instant::now();
    s.checkpoint(
        &dir,
        &airlock_runtime::backend::CheckpointOptions { then_stop: true },
    )
    .unwrap();
    let save = ms(t.elapsed());
    let size: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    s.kill();
    // The peer: the host writing 256 MiB of random data to a file beside it.
    let mut random = vec![0u8; 256 << 20];
    let mut f = std::fs::File::open("/dev/urandom").unwrap();
    std::io::Read::read_exact(&mut f, &mut random).unwrap();
    let t = Instant::now();
    let mut f = std::fs::File::create(dir.join("peer")).unwrap();
    // Neither side syncs: both are writes into the host's page cache.
    std::io::Write::write_all(&mut f, &random).unwrap();
    drop(f);
    let peer = ms(t.elapsed());
    let t = Instant::now();
    let mut r = LiveSandbox::connect(
        vm.restore(&dir, &p, &Template::Host, &StartOptions::default())
            .unwrap(),
    )
    .unwrap();
    let out = r
        .channel()
        .exec(&["sh", "-c", "wc -c < /tmp/fill"], &[], None, None, 1 << 10)
        .unwrap();
    let restore = ms(t.elapsed());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "268435456");
    r.kill();
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "pause of a box holding 256 MiB (1 GiB guest): save {save:.0} ms, {:.0} MiB; host writing 256 MiB {peer:.0} ms: ratio {:.1}×; restore → first output {restore:.0} ms",
        size as f64 / (1 << 20) as f64,
        save / peer
    );
}

/// create → first exec output → delete through `airlock serve`, microvm next to native.
fn api(bin: &Path, runs: usize) {
    let data = std::env::temp_dir().join(format!("mvm-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&data).unwrap();
    let mut child = std::process::Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut key, mut base) = (String::new(), String::new());
    let mut line = String::new();
    while base.is_empty() {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "serve exited");
        if let Some(k) = line.trim().strip_prefix("api key: ") {
            key = k.to_string();
        }
        if let Some(a) = line.trim().strip_prefix("listening on ") {
            base = a.to_string();
        }
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let auth = format!("Bearer {key}");
    let once = |backend: &str| -> f64 {
        let t = Instant::now();
        let body =
            format!(r#"{{"backend": "{backend}", "policy": {{"limits": {{"memory": "512M"}}}}}}"#);
        let created = ureq::post(&format!("{base}/v1/sandboxes"))
            .set("Authorization", &auth)
            .send_string(&body)
            .unwrap()
            .into_string()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&created).unwrap();
        let id = v["id"].as_str().unwrap().to_string();
        let text = ureq::post(&format!("{base}/v1/sandboxes/{id}/exec"))
            .set("Authorization", &auth)
            .send_string(r#"{"cmd": ["echo", "ok"]}"#)
            .unwrap()
            .into_string()
            .unwrap();
        let took = ms(t.elapsed());
        assert!(text.contains("ok"), "{text}");
        let _ = ureq::delete(&format!("{base}/v1/sandboxes/{id}"))
            .set("Authorization", &auth)
            .call();
        took
    };
    once("microvm");
    let (mut v, mut n) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        v.push(once("microvm"));
        n.push(once("native"));
    }
    let (v, n) = (median(v), median(n));
    println!(
        "API create → first exec output: microvm median {v:.0} ms, native {n:.0} ms, ratio {:.1}×",
        v / n
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&data);
}
