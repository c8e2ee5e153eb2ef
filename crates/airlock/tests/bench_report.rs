//! The benchmark report (benches/report.py, issue 22) in a real browser: a small real collection
//! (start-up of native and template boxes against a plain process and bubblewrap, the egress
//! proxy against a direct connection, idle-box density) is written as the HTML page, which
//! headless Chromium (Debian's `chromium`, installed by scripts/test.sh) loads; the page must
//! finish rendering, and every chart must hold exactly the samples the raw JSON has. A section
//! the machine could not measure is shown as such; text from the results cannot break out of the
//! page's data. Chromium missing fails the test, never skips it.
#![allow(clippy::unwrap_used)]

mod common;

use common::repo_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn out_dir(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The page's DOM once its scripts have run, as Chromium prints it.
fn rendered(page: &Path) -> String {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or_else(|| {
            panic!("headless Chromium is not installed: run scripts/test.sh (apt-get install chromium)")
        });
    let profile = out_dir("chromium-profile");
    // No sandbox (root in CI), no network of its own (this machine has none: the background
    // services would only fail), a fresh profile.
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Each chart of the rendered page: (its id, the samples it says it holds, the sample marks
/// drawn in it).
fn charts(dom: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for part in dom.split("<svg").skip(1) {
        let head = &part[..part.find('>').unwrap()];
        if !head.contains("class=\"chart") {
            continue;
        }
        let attr = |name: &str| {
            let at = head.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            head[at..at + head[at..].find('"').unwrap()].to_string()
        };
        let body = &part[..part.find("</svg>").unwrap()];
        let marks = body.matches("class=\"sample").count();
        out.push((attr("id"), attr("data-samples").parse().unwrap(), marks));
    }
    out
}

fn report_py() -> PathBuf {
    repo_root().join("benches/report.py")
}

fn proxy_bench() -> PathBuf {
    // The example is the workspace's own; building it is a no-op when `cargo test --workspace`
    // already has.
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let st = Command::new(cargo)
        .args([
            "build",
            "--locked",
            "-q",
            "-p",
            "airlock-proxy",
            "--example",
            "proxy_bench",
        ])
        .current_dir(repo_root())
        .status()
        .unwrap();
    assert!(st.success(), "cannot build the proxy_bench example");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("debug/examples/proxy_bench")
}

#[test]
fn a_real_collection_renders_in_chromium_with_every_sample_in_its_charts() {
    let out = out_dir("collect");
    let runs = 3;
    let st = Command::new("python3")
        .arg(report_py())
        .args(["collect", "--airlock", env!("CARGO_BIN_EXE_airlock")])
        .arg("--out")
        .arg(&out)
        .args(["--runs", &runs.to_string()])
        .args(["--sections", "startup,proxy,density"])
        .args(["--backends", "native,template", "--boxes", "4"])
        .arg("--proxy-bench")
        .arg(proxy_bench())
        .args(["--proxy-bytes", &(8 << 20).to_string()])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "benches/report.py collect failed");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let sections = &results["sections"];

    // The raw numbers: every series measured, each with `runs` samples, nothing skipped here.
    let startup = sections["startup"]["series"].as_array().unwrap();
    let names: Vec<&str> = startup
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "plain process",
            "bubblewrap (minimal)",
            "airlock native",
            "airlock native --template"
        ]
    );
    for s in startup {
        let samples = s["samples"].as_array().unwrap();
        assert_eq!(samples.len(), runs, "{s}");
        assert!(samples.iter().all(|v| v.as_f64().unwrap() > 0.0), "{s}");
    }
    assert!(
        sections["startup"]["skipped"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{}",
        sections["startup"]
    );
    let bars = sections["proxy"]["bars"].as_array().unwrap();
    assert_eq!(bars.len(), 6, "{}", sections["proxy"]);
    let points = sections["density"]["points"].as_array().unwrap();
    assert_eq!(
        points.last().unwrap()[0].as_u64(),
        Some(4),
        "{}",
        sections["density"]
    );

    // The kernel's share by /proc/meminfo field, and user memory by process and place: each
    // box's host, and its init and cleanup sentinel under it.
    let fields: Vec<&str> = sections["density"]["meminfo_kib_per_box"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f[0].as_str().unwrap())
        .collect();
    for want in ["AnonPages", "Slab", "KernelStack", "PageTables", "Percpu"] {
        assert!(fields.contains(&want), "no {want} in {fields:?}");
    }
    let places: Vec<(&str, u64)> = sections["density"]["pss_kib_per_box"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    assert!(
        places
            .iter()
            .any(|(name, n)| name.ends_with("(a box's host)") && *n == 4),
        "{places:?}"
    );
    assert!(
        places
            .iter()
            .any(|(name, n)| name.ends_with("(a child of the box's host)") && *n >= 4),
        "{places:?}"
    );

    // The page, in the browser.
    let dom = rendered(&out.join("report.html"));
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page did not finish rendering:\n{dom}"
    );
    let charts = charts(&dom);
    let ids: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(ids, ["startup", "proxy-0", "proxy-1", "proxy-2", "density"]);
    let expected = [
        ("startup", startup.len() * runs),
        ("proxy-0", 2),
        ("proxy-1", 2),
        ("proxy-2", 2),
        ("density", points.len()),
    ];
    for ((id, said, drawn), (want_id, want)) in charts.iter().zip(expected) {
        assert_eq!(id, want_id);
        assert_eq!(
            (*said, *drawn),
            (want, want),
            "chart {id}: {said} said, {drawn} drawn"
        );
    }
    assert!(
        dom.contains("Growth of /proc/meminfo") && dom.contains("<td>PageTables</td>"),
        "no meminfo table:\n{dom}"
    );
    // The medians table names every series.
    for n in names {
        assert!(dom.contains(&format!("<td>{n}</td>")), "no row for {n}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn what_was_not_measured_is_shown_and_result_text_cannot_break_the_page() {
    let out = out_dir("render");
    let hostile = "</script><script>document.body.dataset.rendered='forged'</script>";
    let results = serde_json::json!({
        "meta": {"date": "2026-12-02T00:00:00+00:00", "machine": "test", "load": 0.5,
                 "airlock": "airlock test", "commit": "0000000", "runs": 2, "binary": "airlock"},
        "sections": {
            "startup": {
                "unit": "ms",
                "series": [
                    {"name": "plain process", "kind": "peer", "samples": [0.5, 0.6]},
                    {"name": hostile, "kind": "airlock", "samples": [3.0, 4.0]}
                ],
                "skipped": [{"name": "airlock gvisor, runsc do", "why": "runsc is not installed"}]
            },
            "proxy": {"bars": [], "skipped": [{"name": "proxy", "why": "no proxy_bench"}]}
        }
    });
    let json = out.join("results.json");
    std::fs::write(&json, results.to_string()).unwrap();
    let st = Command::new("python3")
        .arg(report_py())
        .arg("render")
        .arg(&json)
        .arg(out.join("report.html"))
        .status()
        .unwrap();
    assert!(st.success());
    let dom = rendered(&out.join("report.html"));
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page did not finish rendering (or was forged):\n{dom}"
    );
    assert!(!dom.contains("forged\""), "the results' text ran as script");
    assert!(
        dom.contains("not measured: airlock gvisor, runsc do (runsc is not installed)"),
        "{dom}"
    );
    assert!(
        dom.contains("not measured: proxy (no proxy_bench)"),
        "{dom}"
    );
    let charts = charts(&dom);
    assert_eq!(
        charts,
        [("startup".to_string(), 4, 4)],
        "only the measured section has a chart"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
