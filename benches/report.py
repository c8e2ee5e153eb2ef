"""airlock's benchmark report (issue 22): the peers side by side in one run, written as one
self-contained HTML page (its charts drawn in the browser from the raw numbers it embeds) plus
the raw numbers as JSON.

    python3 benches/report.py collect --airlock BIN --out DIR [--runs N] [--sections LIST]
                                      [--backends LIST] [--boxes N] [--pool-python PY]
    python3 benches/report.py render DIR/results.json DIR/report.html

Sections (all by default): `startup` (distributions of `airlock run -- /bin/true` per backend
against a plain process, a minimal bubblewrap, `runsc do` and QEMU booting the microVM's guest
kernel), `api` (create -> first output with and without a warm pool, benches/pool.py),
`proxy` (throughput and latency through the egress proxy against a direct connection,
crates/airlock-proxy/examples/proxy_bench.rs) and `density` (host memory per idle native box,
as the drop in MemAvailable). A section or series this machine cannot measure is recorded as
skipped with the reason, and the page shows it so: never an empty or made-up chart.
benches/report.sh runs the whole thing with release builds; the test
(crates/airlock/tests/bench_report.rs) runs a small collection and opens the page in headless
Chromium.
"""
import argparse, datetime, json, os, platform, re, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BACKENDS = ("native", "template", "gvisor", "microvm")
SECTIONS = ("startup", "api", "proxy", "density")


def run_quiet(cmd, **kw):
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, **kw)


def timed(cmd):
    t = time.perf_counter()
    try:
        run_quiet(cmd)
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"{' '.join(cmd)} failed ({e.returncode}): {e.stderr.decode(errors='replace')[-800:]}")
    return (time.perf_counter() - t) * 1000


def check_lines(exe):
    out = subprocess.run([exe, "check"], capture_output=True, text=True)
    return out.stdout + out.stderr


def backend_available(exe, name):
    """(available, why not) from `airlock check`'s line for the backend."""
    line = next((l.strip() for l in check_lines(exe).splitlines() if l.strip().startswith(name)), "")
    if "available" in line and "unavailable" not in line:
        return True, ""
    return False, line or f"`airlock check` names no {name} backend"


# --- start-up ------------------------------------------------------------------------------

def startup(exe, runs, backends, work):
    """Interleaved rounds (every command once per round, so load on the machine falls on all
    alike); each series keeps every sample, in ms."""
    series, skipped = [], []
    cmds = [("plain process", "peer", ["/bin/true"])]
    if shutil.which("bwrap"):
        cmds.append(("bubblewrap (minimal)", "peer", [
            "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",
            "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"]))
    else:
        skipped.append({"name": "bubblewrap (minimal)", "why": "bwrap is not installed"})
    run = [exe, "run", "--no-stdin", "--workspace", "none"]
    if "native" in backends:
        cmds.append(("airlock native", "airlock", run + ["--", "/bin/true"]))
    if "template" in backends:
        data = os.path.join(work, "data")
        subprocess.run([sys.executable, os.path.join(HERE, "template_image.py"), os.path.join(work, "image"),
                        "true"], check=True, stdout=subprocess.DEVNULL)
        run_quiet([exe, "template", "import", "--data-dir", data, "--name", "bench", os.path.join(work, "image")])
        cmds.append(("airlock native --template", "airlock",
                     [exe, "run", "--no-stdin", "--data-dir", data, "--template", "bench", "--workspace",
                      "none", "--", "/bin/true"]))
    slow = []
    if "gvisor" in backends:
        ok, why = backend_available(exe, "gvisor")
        runsc = os.environ.get("AIRLOCK_RUNSC") or shutil.which("runsc")
        if ok and runsc:
            plat = "systrap" if "platform systrap" in check_lines(exe) else "ptrace"
            root = os.path.join(work, "runsc-root")
            os.makedirs(root, exist_ok=True)
            slow.append(("runsc do", "peer", [runsc, f"--root={root}", f"--platform={plat}", "--network=none",
                                               "--directfs=false", "do", "/bin/true"]))
            slow.append(("airlock gvisor", "airlock", run[:2] + ["--backend", "gvisor"] + run[2:] + ["--", "/bin/true"]))
        else:
            skipped.append({"name": "airlock gvisor, runsc do", "why": why or "runsc is not installed"})
    slower = []
    if "microvm" in backends:
        ok, why = backend_available(exe, "microvm")
        guest = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(exe))), "microvm")
        kernel = next((os.path.join(r, f) for r, _, fs in os.walk(os.path.join(guest, "kernel"))
                       for f in fs if f.startswith("vmlinuz")), None)
        if ok:
            slower.append(("airlock microvm", "airlock", run[:2] + ["--backend", "microvm"] + run[2:] + ["--", "/bin/true"]))
        else:
            skipped.append({"name": "airlock microvm", "why": why})
        if kernel and shutil.which("qemu-system-x86_64"):
            # The same guest kernel booted with no root and no init to reach: it panics and
            # QEMU exits (-no-reboot) — a cold boot, where airlock restores a snapshot.
            slower.append(("QEMU cold boot (microvm, TCG)", "peer", [
                "qemu-system-x86_64", "-M", "microvm", "-accel", "tcg", "-m", "256", "-nodefaults",
                "-no-user-config", "-display", "none", "-no-reboot", "-kernel", kernel, "-append",
                "console=ttyS0 panic=-1 quiet"]))
        else:
            skipped.append({"name": "QEMU cold boot", "why": "no guest kernel under target/microvm (scripts/microvm-guest.sh) or no qemu-system-x86_64"})
    for group, n in ((cmds, runs), (slow, max(3, runs // 5)), (slower, max(2, runs // 20))):
        if not group:
            continue
        for _, _, c in group:  # warm-up (page cache, the first template open)
            timed(c)
        samples = {name: [] for name, _, _ in group}
        for _ in range(n):
            for name, _, c in group:
                samples[name].append(timed(c))
        series += [{"name": name, "kind": kind, "samples": samples[name]} for name, kind, _ in group]
    return {"unit": "ms", "series": series, "skipped": skipped}


# --- API create -> first output, with and without a pool -----------------------------------

def api(exe, runs, python, work):
    out = os.path.join(work, "pool.json")
    cmd = [python or sys.executable, os.path.join(HERE, "pool.py"), exe, str(runs), "--json", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"series": [], "skipped": [{"name": "API", "why": f"benches/pool.py failed: {done.stderr[-600:]}"}]}
    got = json.load(open(out))
    return {"unit": "ms", "series": got["series"], "skipped": got.get("skipped", []), "printed": done.stdout}


# --- the egress proxy against a direct connection ------------------------------------------

def proxy(bench, size):
    bars, skipped = [], []
    if not bench or not os.path.exists(bench):
        return {"bars": [], "skipped": [{"name": "proxy", "why": f"no proxy_bench at {bench} (cargo build --release -p airlock-proxy --example proxy_bench)"}]}
    t = subprocess.run([bench, "throughput", str(size), "5"], capture_output=True, text=True, timeout=600)
    m = re.search(r"direct ([\d.]+) GiB/s .*CONNECT ([\d.]+) GiB/s", t.stdout)
    if m:
        bars.append({"group": "throughput (GiB/s, higher is better)", "name": "direct", "value": float(m.group(1))})
        bars.append({"group": "throughput (GiB/s, higher is better)", "name": "through the proxy", "value": float(m.group(2))})
    else:
        skipped.append({"name": "throughput", "why": (t.stdout + t.stderr)[-400:]})
    lat = subprocess.run([bench, "latency", "300"], capture_output=True, text=True, timeout=300)
    for what, label in (("new connection", "small request, new connection (us)"), ("open tunnel", "64-byte round trip, open tunnel (us)")):
        m = re.search(rf"latency, [^\n]*{what}[^\n]*: direct (\d+) us, via \w+ (\d+) us", lat.stdout)
        if m:
            bars.append({"group": label, "name": "direct", "value": float(m.group(1))})
            bars.append({"group": label, "name": "through the proxy", "value": float(m.group(2))})
        else:
            skipped.append({"name": label, "why": (lat.stdout + lat.stderr)[-400:]})
    return {"bars": bars, "skipped": skipped}


# --- density: host memory per idle native box ----------------------------------------------

def mem_available_kib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    raise SystemExit("no MemAvailable in /proc/meminfo")


def slabs():
    """Bytes held by each slab cache (active objects x object size), or None unreadable."""
    try:
        lines = open("/proc/slabinfo").read().splitlines()[2:]
    except OSError:
        return None
    out = {}
    for line in lines:
        f = line.split()
        out[f[0]] = int(f[1]) * int(f[3])
    return out


# The /proc/meminfo fields a box's kernel share shows in (each in KiB): its processes' anonymous
# and shared memory, the slab, kernel stacks, page tables and per-CPU allocations (a memory
# cgroup's statistics live there).
MEMINFO_FIELDS = ("AnonPages", "Shmem", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Percpu",
                  "VmallocUsed")


def meminfo():
    out = {}
    for line in open("/proc/meminfo"):
        name, _, rest = line.partition(":")
        if name in MEMINFO_FIELDS:
            out[name] = int(rest.split()[0])
    return out


def pss_by_process():
    """{pid: (name, ppid, PSS in KiB, private KiB)} of every process this user can read."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            name = open(f"/proc/{p}/comm").read().strip()
            # The parent pid follows the parenthesised name, which may itself hold spaces.
            ppid = int(open(f"/proc/{p}/stat").read().rpartition(")")[2].split()[1])
            rollup = {}
            for line in open(f"/proc/{p}/smaps_rollup"):
                f = line.split()
                if len(f) >= 2 and f[0].endswith(":") and f[1].isdigit():
                    rollup[f[0][:-1]] = int(f[1])
            pss = rollup["Pss"]
            private = rollup.get("Private_Clean", 0) + rollup.get("Private_Dirty", 0)
        except (OSError, KeyError, ValueError, IndexError):
            continue
        out[int(p)] = (name, ppid, pss, private)
    return out


def role(pid, procs, server):
    """A box process's name and place: the server's child is a box's host (or the one cleanup
    sentinel they share, or the zygote the hosts are cloned from), its child the box's init (a
    copy of the host)."""
    name, ppid = procs[pid][0], procs[pid][1]
    if name == "airlock-cleanup":
        return "the server's shared cleanup sentinel"
    if name == "airlock-zygote":
        return "the server's host zygote"
    if ppid == server:
        return f"{name} (a box's host)"
    if ppid in procs and procs[ppid][1] == server:
        return f"{name} (a child of the box's host)"
    return f"{name} (deeper in the box)"


def density(exe, boxes):
    from airlock_api import Server
    # Every box running at once (the server queues creates past --max-running).
    srv = Server(exe, "--max-running", str(boxes + 1))
    ids, points = [], []
    try:
        step = max(1, boxes // 10)
        slab_before = slabs()
        procs_before = pss_by_process()
        info_before = meminfo()
        base = mem_available_kib()
        points.append([0, 0.0])
        while len(ids) < boxes:
            for _ in range(min(step, boxes - len(ids))):
                ids.append(json.loads(srv.call("POST", "/v1/sandboxes", {}))["id"])
            time.sleep(0.2)  # let the boxes settle idle
            points.append([len(ids), (base - mem_available_kib()) / 1024])
        slab_after = slabs()
        info_after = meminfo()
        procs_after = pss_by_process()
        # The boxes' own processes (new since the start, by name and place) and the server's
        # growth.
        per_process = {}
        for pid, (_, _, pss, private) in procs_after.items():
            if pid == srv.pid or pid in procs_before:
                continue
            key = role(pid, procs_after, srv.pid)
            n, kib, own = per_process.get(key, (0, 0, 0))
            per_process[key] = (n + 1, kib + pss, own + private)
        grew = [a - b for a, b in zip(procs_after.get(srv.pid, ("", 0, 0, 0))[2:],
                                      procs_before.get(srv.pid, ("", 0, 0, 0))[2:])]
        per_process["the server (its growth)"] = (1, grew[0], grew[1])
    finally:
        for sid in ids:
            try:
                srv.call("DELETE", f"/v1/sandboxes/{sid}")
            except Exception:  # noqa: BLE001 (the server's stop ends what is left)
                pass
        srv.stop()
    # The slope of a least-squares line through the points: MiB per box.
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points) or 1
    slope = sum((p[0] - mx) * (p[1] - my) for p in points) / den
    # The kernel's share: the slab caches that grew most, per box.
    grown = []
    if slab_before is not None and slab_after is not None:
        grown = sorted(([k, (v - slab_before.get(k, 0)) / boxes / 1024] for k, v in slab_after.items()),
                       key=lambda kv: -kv[1])[:12]
    return {"boxes": boxes, "points": points, "mib_per_box": slope, "slab_kib_per_box": grown,
            "slab_readable": slab_before is not None,
            "pss_kib_per_box": sorted(([k, n, kib / boxes, own / boxes]
                                       for k, (n, kib, own) in per_process.items()),
                                      key=lambda x: -x[2]),
            "meminfo_kib_per_box": [[k, (info_after.get(k, 0) - info_before.get(k, 0)) / boxes]
                                    for k in MEMINFO_FIELDS if k in info_before]}


def collect(a):
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="airlock-report-")
    exe = os.path.realpath(a.airlock)
    sections = a.sections.split(",")
    backends = a.backends.split(",")
    for s in sections:
        if s not in SECTIONS:
            raise SystemExit(f"unknown section {s!r}: choose from {', '.join(SECTIONS)}")
    for b in backends:
        if b not in BACKENDS:
            raise SystemExit(f"unknown backend {b!r}: choose from {', '.join(BACKENDS)}")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {"meta": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}",
                    "load": os.getloadavg()[0], "airlock": version, "commit": commit, "runs": a.runs,
                    "binary": exe},
           "sections": {}}
    try:
        if "startup" in sections:
            res["sections"]["startup"] = startup(exe, a.runs, backends, work)
        if "api" in sections:
            res["sections"]["api"] = api(exe, a.runs, a.pool_python, work)
        if "proxy" in sections:
            res["sections"]["proxy"] = proxy(a.proxy_bench, a.proxy_bytes)
        if "density" in sections:
            res["sections"]["density"] = density(exe, a.boxes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = os.path.join(a.out, "results.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    render(path, os.path.join(a.out, "report.html"))
    print(f"wrote {path} and {os.path.join(a.out, 'report.html')}")


# --- the page -------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>airlock benchmark report</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}.skipped{color:#a33}.meta{color:#555}
svg text{font:11px system-ui,sans-serif}.peer{fill:#888}.airlock{fill:#1f6fb2}
</style></head><body>
<h1>airlock benchmark report</h1>
<p class="meta" id="meta"></p>
<div id="errors" class="skipped"></div>
<div id="sections"></div>
<h2>Raw numbers</h2><p>Every sample, as collected: <a id="raw" download="results.json">results.json</a>.</p>
<script type="application/json" id="results">__RESULTS__</script>
<script>
"use strict";
const R = JSON.parse(document.getElementById("results").textContent);
const NS = "http://www.w3.org/2000/svg";
const el = (tag, attrs, parent, text) => {
  const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
};
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); const i = (s.length - 1) * p;
  const lo = Math.floor(i), hi = Math.ceil(i); return s[lo] + (s[hi] - s[lo]) * (i - lo); };
const fmt = v => v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
function section(title, note) {
  const s = el("section", {}, document.getElementById("sections"));
  el("h2", {}, s, title);
  if (note) el("p", {}, s, note);
  return s;
}
function skipped(s, list) {
  for (const k of list || []) el("p", {class: "skipped"}, s, `not measured: ${k.name} (${k.why})`);
}
// Distributions on a log axis: a box (p25-p75, median line) and every sample as a dot.
function distributions(s, series, unit, id) {
  if (!series.length) return;
  const all = series.flatMap(x => x.samples), lo = Math.min(...all) * 0.8, hi = Math.max(...all) * 1.25;
  const W = 940, L = 230, row = 34, H = row * series.length + 40;
  const X = v => L + (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) * (W - L - 20);
  const svg = el("svg:svg", {width: W, height: H, class: "chart", id, "data-samples": all.length}, s);
  // 1-2-5 ticks over a few decades; one per decade over more, so labels do not overlap.
  const mults = Math.log10(hi / lo) > 3 ? [1] : [1, 2, 5];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) for (const m of mults) {
    const v = m * 10 ** e; if (v < lo || v > hi) continue;
    el("svg:line", {x1: X(v), x2: X(v), y1: 10, y2: H - 25, stroke: "#eee"}, svg);
    el("svg:text", {x: X(v), y: H - 10, "text-anchor": "middle"}, svg, `${v} ${unit}`);
  }
  series.forEach((x, i) => {
    const y = 20 + i * row, cls = x.kind === "peer" ? "peer" : "airlock";
    el("svg:text", {x: L - 8, y: y + 14, "text-anchor": "end"}, svg, x.name);
    const [a, m, b] = [q(x.samples, .25), q(x.samples, .5), q(x.samples, .75)];
    el("svg:rect", {x: X(a), y: y + 3, width: Math.max(1, X(b) - X(a)), height: 20, class: cls, "fill-opacity": .25}, svg);
    el("svg:line", {x1: X(m), x2: X(m), y1: y + 1, y2: y + 25, stroke: "#000", "stroke-width": 2}, svg);
    x.samples.forEach((v, j) => el("svg:circle", {cx: X(v), cy: y + 6 + (j * 7919 % 15), r: 2, class: `sample ${cls}`, "fill-opacity": .6}, svg));
  });
}
function medians(s, series, peerOf) {
  const t = el("table", {}, s);
  const h = el("tr", {}, t);
  for (const c of ["series", "samples", "median", "p10", "p90", peerOf ? "median / " + peerOf : ""]) el("th", {}, h, c);
  const peer = peerOf && series.find(x => x.name === peerOf);
  for (const x of series) {
    const r = el("tr", {}, t), m = q(x.samples, .5);
    for (const c of [x.name, x.samples.length, fmt(m), fmt(q(x.samples, .1)), fmt(q(x.samples, .9)),
                     peer ? (m / q(peer.samples, .5)).toFixed(2) + "x" : ""]) el("td", {}, r, String(c));
  }
}
function bars(s, list, id) {
  const groups = [...new Set(list.map(b => b.group))];
  for (const g of groups) {
    const items = list.filter(b => b.group === g), max = Math.max(...items.map(b => b.value));
    el("h3", {}, s, g);
    const svg = el("svg:svg", {width: 940, height: 30 * items.length + 10, class: "chart bars", id: `${id}-${groups.indexOf(g)}`, "data-samples": items.length}, s);
    items.forEach((b, i) => {
      el("svg:text", {x: 222, y: 22 + i * 30, "text-anchor": "end"}, svg, b.name);
      el("svg:rect", {x: 230, y: 8 + i * 30, width: Math.max(1, b.value / max * 620), height: 20, class: `sample ${i ? "airlock" : "peer"}`}, svg);
      el("svg:text", {x: 236 + b.value / max * 620, y: 22 + i * 30}, svg, fmt(b.value));
    });
  }
}
function points(s, pts, id) {
  const W = 940, H = 260, L = 60, maxX = Math.max(...pts.map(p => p[0]), 1), maxY = Math.max(...pts.map(p => p[1]), 1);
  const X = v => L + v / maxX * (W - L - 20), Y = v => H - 30 - v / maxY * (H - 50);
  const svg = el("svg:svg", {width: W, height: H, class: "chart", id, "data-samples": pts.length}, s);
  el("svg:line", {x1: L, x2: W - 20, y1: Y(0), y2: Y(0), stroke: "#999"}, svg);
  el("svg:line", {x1: L, x2: L, y1: 10, y2: Y(0), stroke: "#999"}, svg);
  el("svg:text", {x: W - 20, y: H - 8, "text-anchor": "end"}, svg, `${maxX} idle boxes`);
  el("svg:text", {x: L - 4, y: 16, "text-anchor": "end"}, svg, `${fmt(maxY)} MiB`);
  el("svg:polyline", {points: pts.map(p => `${X(p[0])},${Y(p[1])}`).join(" "), fill: "none", stroke: "#1f6fb2"}, svg);
  for (const p of pts) el("svg:circle", {cx: X(p[0]), cy: Y(p[1]), r: 3, class: "sample airlock"}, svg);
}
try {
  const m = R.meta;
  document.getElementById("meta").textContent =
    `${m.date} · ${m.machine} · load ${m.load.toFixed(1)} · ${m.airlock} (${m.commit}) · ${m.runs} runs per series`;
  document.getElementById("raw").href = "data:application/json," + encodeURIComponent(JSON.stringify(R, null, 1));
  const S = R.sections;
  if (S.startup) {
    const s = section("Start-up: a box running /bin/true, per backend, against its peers",
      "Each dot is one start (interleaved rounds: every series once per round). Log axis. airlock's series in blue, peers in grey.");
    distributions(s, S.startup.series, S.startup.unit, "startup");
    medians(s, S.startup.series, "bubblewrap (minimal)");
    skipped(s, S.startup.skipped);
  }
  if (S.api) {
    const s = section("API: create → first output, with and without a warm pool", "Two servers in the same run, driven in turns (benches/pool.py).");
    distributions(s, S.api.series, S.api.unit, "api");
    medians(s, S.api.series);
    skipped(s, S.api.skipped);
  }
  if (S.proxy) {
    const s = section("Egress proxy against a direct connection", "On 127.0.0.1 (crates/airlock-proxy/examples/proxy_bench.rs).");
    bars(s, S.proxy.bars, "proxy");
    skipped(s, S.proxy.skipped);
  }
  if (S.density) {
    const d = S.density;
    const s = section("Density: host memory for idle native boxes",
      `The drop in MemAvailable as ${d.boxes} idle boxes are created through the API: ${fmt(d.mib_per_box)} MiB per box (least-squares slope).`);
    points(s, d.points, "density");
    if (d.pss_kib_per_box && d.pss_kib_per_box.length) {
      el("h3", {}, s, "User memory (PSS) per box, by process");
      const t = el("table", {}, s);
      const h = el("tr", {}, t);
      for (const c of ["process", "count", "PSS, KiB per box", "private, KiB per box"]) el("th", {}, h, c);
      for (const [name, n, kib, own] of d.pss_kib_per_box) { const r = el("tr", {}, t); el("td", {}, r, name); el("td", {}, r, String(n)); el("td", {}, r, fmt(kib)); el("td", {}, r, own === undefined ? "" : fmt(own)); }
    }
    if (d.meminfo_kib_per_box && d.meminfo_kib_per_box.length) {
      el("h3", {}, s, "Growth of /proc/meminfo's fields, KiB per box");
      const t = el("table", {}, s);
      for (const [name, kib] of d.meminfo_kib_per_box) { const r = el("tr", {}, t); el("td", {}, r, name); el("td", {}, r, fmt(kib)); }
    }
    if (d.slab_kib_per_box && d.slab_kib_per_box.length) {
      el("h3", {}, s, "The kernel's slab caches that grew most, KiB per box");
      const t = el("table", {}, s);
      for (const [name, kib] of d.slab_kib_per_box) { const r = el("tr", {}, t); el("td", {}, r, name); el("td", {}, r, fmt(kib)); }
    } else {
      el("p", {class: "skipped"}, s, "not measured: slab caches (/proc/slabinfo is readable by root only)");
    }
  }
  document.body.dataset.rendered = "ok";
} catch (e) {
  document.getElementById("errors").textContent = "the report failed to render: " + e;
  document.body.dataset.rendered = "error";
}
</script></body></html>
"""


def render(results, html):
    data = json.load(open(results))
    # Inside <script>, "</" must not appear as is.
    text = json.dumps(data).replace("</", "<\\/")
    with open(html, "w") as f:
        f.write(PAGE.replace("__RESULTS__", text))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--airlock", required=True, help="the airlock binary to measure")
    c.add_argument("--out", required=True, help="directory for results.json and report.html")
    c.add_argument("--runs", type=int, default=100)
    c.add_argument("--sections", default=",".join(SECTIONS))
    c.add_argument("--backends", default=",".join(BACKENDS))
    c.add_argument("--boxes", type=int, default=200, help="idle boxes for the density section")
    c.add_argument("--pool-python", help="python with E2B's SDK for the API section (scripts/e2b-clients.sh)")
    c.add_argument("--proxy-bench", help="the proxy_bench example binary")
    c.add_argument("--proxy-bytes", type=int, default=256 << 20, help="bytes per throughput transfer")
    r = sub.add_parser("render")
    r.add_argument("results")
    r.add_argument("html")
    a = p.parse_args()
    if a.cmd == "collect":
        if a.runs < 1 or a.boxes < 1:
            raise SystemExit("--runs and --boxes must be at least 1")
        collect(a)
    else:
        render(a.results, a.html)


if __name__ == "__main__":
    main()
