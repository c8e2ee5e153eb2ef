//! Long-lived sandbox figures (issue 4), each against a plain peer in the same run:
//! create-to-first-exec vs a plain fork+exec of the same command, a warm exec round trip through
//! the agent vs a plain fork+exec, host-side memory per idle box, and N idle boxes held at once.
//! Usage: sandbox_bench AIRLOCK_EXE [IDLE_BOXES]
#![allow(clippy::unwrap_used)]

use airlock_native::NativeBackend;
use airlock_policy::{resolve, PolicyFile, ResolveContext};
use airlock_runtime::backend::{StartOptions, Template};
use airlock_runtime::{LiveSandbox, RealHost};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn rss_kib(pid: i32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(field).map(|v| {
                v.split_whitespace()
                    .next()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

fn pss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Pss:").map(|v| {
                v.split_whitespace()
                    .next()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

/// The children of every thread of `pid` (boxes are started from the backend's own threads).
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|t| {
            std::fs::read_to_string(t.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// A box-side process: it has a pid in a namespace below ours.
fn in_box(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("NSpid:") && l.split_whitespace().count() > 2)
}

fn main() {
    let exe = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: sandbox_bench AIRLOCK_EXE [IDLE_BOXES]"),
    );
    let idle: usize = std::env::args()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ws = std::env::temp_dir().join(format!("airlock-sbx-bench-{}", std::process::id()));
    std::fs::create_dir_all(&ws).unwrap();
    let env = BTreeMap::new();
    let file = PolicyFile {
        workspace: Some(ws.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let policy = resolve(
        &file,
        &ResolveContext {
            cwd: ws.clone(),
            env: &env,
            host: &RealHost,
        },
    )
    .unwrap();
    let opts = StartOptions::default();
    let backend = NativeBackend::new(exe.clone());

    let plain = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                std::process::Command::new("/bin/true").status().unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect()
    };

    // Create + first exec.
    let mut create = Vec::new();
    for _ in 0..40 {
        let t = Instant::now();
        let mut s = LiveSandbox::start(&backend, &policy, &Template::Host, &opts).unwrap();
        s.channel()
            .exec(&["/bin/true"], &[], None, None, 1024)
            .unwrap();
        create.push(t.elapsed().as_secs_f64() * 1000.0);
        s.kill();
    }
    let plain_ms = median(plain(200));
    println!("create-to-first-exec median: {:.2} ms; plain fork+exec of /bin/true {:.2} ms (goal <= 15 ms)", median(create), plain_ms);

    // Warm exec.
    let mut s = LiveSandbox::start(&backend, &policy, &Template::Host, &opts).unwrap();
    for _ in 0..20 {
        s.channel()
            .exec(&["/bin/true"], &[], None, None, 1024)
            .unwrap();
    }
    let warm: Vec<f64> = (0..500)
        .map(|_| {
            let t = Instant::now();
            s.channel()
                .exec(&["/bin/true"], &[], None, None, 1024)
                .unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    println!(
        "warm exec of /bin/true through the agent, median: {:.3} ms; plain fork+exec {:.3} ms (goal <= 2 ms through the API)",
        median(warm),
        median(plain(500))
    );
    // Interpreter: creating a Python context, and a warm `1+1`.
    let mut ctxs = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let mut ctx = s
            .channel()
            .create_context(airlock_runtime::Language::Python, None)
            .unwrap();
        s.channel()
            .run_code(&mut ctx, "pass", &BTreeMap::new(), None, |_| {})
            .unwrap();
        ctxs.push(t.elapsed().as_secs_f64() * 1000.0);
        s.channel().close_context(ctx).unwrap();
    }
    let mut ctx = s
        .channel()
        .create_context(airlock_runtime::Language::Python, None)
        .unwrap();
    for _ in 0..20 {
        s.channel()
            .run_code(&mut ctx, "1+1", &BTreeMap::new(), None, |_| {})
            .unwrap();
    }
    let code: Vec<f64> = (0..300)
        .map(|_| {
            let t = Instant::now();
            s.channel()
                .run_code(&mut ctx, "1+1", &BTreeMap::new(), None, |_| {})
                .unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    println!(
        "python context create + first execution, median: {:.1} ms (goal <= 100 ms); warm 1+1 through the agent, median: {:.3} ms",
        median(ctxs),
        median(code)
    );
    s.kill();

    // Idle boxes held at once, and host-side memory per idle box.
    let t = Instant::now();
    let mut boxes = Vec::new();
    for _ in 0..idle {
        boxes.push(LiveSandbox::start(&backend, &policy, &Template::Host, &opts).unwrap());
    }
    let held = t.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let me = std::process::id() as i32;
    let hosts = children(me);
    let (mut rss, mut pss, mut n) = (0u64, 0u64, 0u64);
    for h in &hosts {
        // The sandbox-host process and its sentinel (the agent inside the box is counted apart).
        rss += rss_kib(*h, "VmRSS:");
        pss += pss_kib(*h);
        n += 1;
        for c in children(*h) {
            if !in_box(c) {
                rss += rss_kib(c, "VmRSS:");
                pss += pss_kib(c);
            }
        }
    }
    let agents: Vec<i32> = hosts
        .iter()
        .flat_map(|h| children(*h))
        .filter(|c| in_box(*c))
        .collect();
    let agent_pss: u64 = agents.iter().map(|p| pss_kib(*p)).sum();
    let all_alive = agents
        .iter()
        .all(|p| std::path::Path::new(&format!("/proc/{p}")).exists());
    println!(
        "{idle} idle boxes held at once: {} (started in {:.2} s); host side per box: RSS {:.2} MiB, PSS {:.2} MiB (supervisor + sentinel); the agent inside: PSS {:.2} MiB (goal <= 3 MiB host side)",
        if all_alive && agents.len() == idle && n as usize == idle { "ok" } else { "FAILED" },
        held.as_secs_f64(),
        rss as f64 / 1024.0 / idle as f64,
        pss as f64 / 1024.0 / idle as f64,
        agent_pss as f64 / 1024.0 / idle as f64,
    );
    drop(boxes);
    let _ = std::fs::remove_dir_all(&ws);
}
