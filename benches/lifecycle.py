"""Pause and resume figures (issue 19), through the REST API of one `airlock serve` per backend:
- resume to first output: `POST …/resume` then `exec echo`, next to a fresh create + `exec echo`
  (the peer: what a box without pause would cost) in the same run;
- pause of a box holding 256 MiB (a Python process holding a 256 MiB buffer of data), and the
  snapshot's size; the same with 64 MiB to show how the snapshot grows with the box's memory.
Usage: python3 benches/lifecycle.py AIRLOCK_EXE TEMPLATES_DIR [ROUNDS]
TEMPLATES_DIR holds a built code-interpreter template (target/airlock-templates/templates)."""
import json, os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(__file__))
from airlock_api import Server

exe, templates = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10


def server(backend):
    data = tempfile.mkdtemp(prefix="airlock-bench-life-")
    subprocess.run(["cp", "-al", templates, os.path.join(data, "templates")], check=True)
    return Server(exe, "--backend", backend, data=data)


def create(s, backend, template):
    body = {"template": template, "backend": backend, "timeout": 3600}
    v = json.loads(s.call("POST", "/v1/sandboxes", body))
    return v["id"]


def echo(s, sid):
    out = s.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": ["echo", "hi"]}).decode()
    assert '"hi\\n"' in out or "hi" in out, out


def ms(xs):
    return f"median {statistics.median(xs) * 1000:.1f} ms (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f})"


backends = sys.argv[4].split(",") if len(sys.argv) > 4 else ["native", "microvm"]
for backend, template in [(b, "code-interpreter") for b in backends]:
    s = server(backend)
    try:
        resume, fresh, pause = [], [], []
        sid = create(s, backend, template)
        echo(s, sid)
        for _ in range(rounds):
            s.call("POST", f"/v1/sandboxes/{sid}/pause", {})
            t0 = time.perf_counter()
            s.call("POST", f"/v1/sandboxes/{sid}/resume")
            echo(s, sid)
            resume.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            other = create(s, backend, template)
            echo(s, other)
            fresh.append(time.perf_counter() - t0)
            s.call("DELETE", f"/v1/sandboxes/{other}")
        print(f"{backend}: resume to first output {ms(resume)}")
        print(f"{backend}: peer, create to first output {ms(fresh)}")
        print(f"{backend}: ratio resume / create {statistics.median(resume) / statistics.median(fresh):.3f}")
        for mib in (64, 256):
            box = create(s, backend, template)
            s.hold_memory(box, mib)
            t0 = time.perf_counter()
            v = json.loads(s.call("POST", f"/v1/sandboxes/{box}/pause", {}))
            took = time.perf_counter() - t0
            snaps = json.loads(s.call("GET", f"/v1/sandboxes/{box}/snapshots"))["snapshots"]
            size = sum(x["bytes"] for x in snaps)
            print(f"{backend}: pause of a box holding {mib} MiB: {took * 1000:.0f} ms, "
                  f"{v['kept']['mechanism']}, resident {v['kept']['resident']}, snapshot {size / (1 << 20):.1f} MiB")
            s.call("DELETE", f"/v1/sandboxes/{box}")
        s.call("DELETE", f"/v1/sandboxes/{sid}")
    finally:
        s.stop()
