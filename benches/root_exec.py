"""What a root command costs (issue 18), through the REST API of one `airlock serve` per backend:
`exec true` as the box user and as root (`"user": "root"`), interleaved in one box per backend,
so the ratio root / user is what entering the box's root adds to a command there — a `setns`
into the box's root namespace (native, microVM) or a user namespace of the command's own and
its three map writes (gVisor, inside the Sentry).
Usage: python3 benches/root_exec.py AIRLOCK_EXE [ROUNDS] [BACKENDS]   (BACKENDS: comma-separated,
default native,gvisor,microvm; gVisor needs AIRLOCK_RUNSC or runsc on PATH)."""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from airlock_api import Server

exe = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
backends = sys.argv[3].split(",") if len(sys.argv) > 3 else ["native", "gvisor", "microvm"]


def run(s, sid, user):
    body = {"cmd": ["id", "-u"]}
    if user:
        body["user"] = user
    t = time.perf_counter()
    out = s.call("POST", f"/v1/sandboxes/{sid}/exec", body).decode()  # one JSON event a line
    took = time.perf_counter() - t
    want = '"0\\n"' if user == "root" else '"1000\\n"'
    assert want in out, out
    return took


for backend in backends:
    extra = ["--runsc", os.environ["AIRLOCK_RUNSC"]] if backend == "gvisor" and os.environ.get("AIRLOCK_RUNSC") else []
    s = Server(exe, "--backend", backend, *extra)
    try:
        sid = json.loads(s.call("POST", "/v1/sandboxes", {"backend": backend, "timeout": 3600}))["id"]
        for _ in range(3):  # warm both paths
            run(s, sid, None)
            run(s, sid, "root")
        user, root = [], []
        for i in range(rounds):
            order = [(None, user), ("root", root)]
            for who, into in order if i % 2 == 0 else reversed(order):
                into.append(run(s, sid, who))
        mu, mr = statistics.median(user), statistics.median(root)
        print(f"{backend}: exec `id -u` as user median {mu * 1000:.2f} ms, as root {mr * 1000:.2f} ms, "
              f"root / user {mr / mu:.3f} ({rounds} rounds)")
        s.call("DELETE", f"/v1/sandboxes/{sid}")
    finally:
        s.stop()
