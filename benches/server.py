"""API figures for `airlock serve` (issue 4), next to a plain fork+exec in the same run.

Usage: python3 benches/server.py AIRLOCK_BINARY [IDLE_BOXES]
Starts its own server on 127.0.0.1 with a temporary data directory and stops it at the end.
"""
import json, os, statistics, subprocess, sys, time

from airlock_api import Server

exe = sys.argv[1]
idle = int(sys.argv[2]) if len(sys.argv) > 2 else 200
server = Server(exe, "--max-running", str(idle + 8))
call = server.call


def create():
    return json.loads(call("POST", "/v1/sandboxes", {"template": "base"}))["id"]


def exec_true(sid):
    lines = call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": ["/bin/true"]}).decode().splitlines()
    end = json.loads(lines[-1])
    assert end["type"] == "end" and end["exit_code"] == 0, lines


def plain(n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


try:
    # Create + first exec, then delete.
    firsts = []
    for _ in range(40):
        t = time.perf_counter()
        sid = create()
        exec_true(sid)
        firsts.append((time.perf_counter() - t) * 1000)
        call("DELETE", f"/v1/sandboxes/{sid}")
    print(f"create-to-first-exec through the API, median: {statistics.median(firsts):.2f} ms; "
          f"plain fork+exec {plain(100):.2f} ms (goal <= 15 ms)")

    # Warm exec.
    sid = create()
    for _ in range(20):
        exec_true(sid)
    warm = []
    for _ in range(500):
        t = time.perf_counter()
        exec_true(sid)
        warm.append((time.perf_counter() - t) * 1000)
    print(f"warm exec of /bin/true through the API, median: {statistics.median(warm):.3f} ms; "
          f"plain fork+exec {plain(300):.3f} ms (goal <= 2 ms)")
    call("DELETE", f"/v1/sandboxes/{sid}")

    # Idle boxes held at once; host-side memory per box.
    def pss(pid):
        try:
            for line in open(f"/proc/{pid}/smaps_rollup"):
                if line.startswith("Pss:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def kids(pid):
        # Children of every thread (the server starts boxes from several threads).
        out = []
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    out += [int(p) for p in open(f"/proc/{pid}/task/{tid}/children").read().split()]
                except OSError:
                    pass
        except OSError:
            pass
        return out

    server_before = pss(server.pid)
    t = time.perf_counter()
    ids = [create() for _ in range(idle)]
    took = time.perf_counter() - t
    time.sleep(0.5)
    hosts = kids(server.pid)
    host_side = sum(pss(h) + sum(pss(s) for s in kids(h) if "NSpid:" in open(f"/proc/{s}/status").read()
                                 and len(next(l for l in open(f"/proc/{s}/status") if l.startswith("NSpid:")).split()) == 2)
                    for h in hosts)
    server_growth = max(0, pss(server.pid) - server_before)
    assert len(hosts) == idle, f"found {len(hosts)} sandbox-host processes for {idle} boxes"
    listed = json.loads(call("GET", "/v1/sandboxes?state=running"))
    ok = len(ids) == idle and len([s for s in listed if s["id"] in set(ids)]) == idle
    print(f"{idle} idle boxes held at once: {'ok' if ok else 'FAILED'} (created in {took:.2f} s); "
          f"host side per idle box: {(host_side + server_growth) / 1024 / idle:.2f} MiB PSS "
          f"(sandbox-host + sentinel + server growth) (goal <= 3 MiB)")
    for i in ids:
        call("DELETE", f"/v1/sandboxes/{i}")
finally:
    server.stop()
