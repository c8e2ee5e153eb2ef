"""WASM box figures (issue 17), each against a peer in the same run:
- warm `1+1` in Python through `airlock serve` (POST /v1/sandboxes/{id}/code, whole NDJSON stream
  read) in a wasm box against the same in a native box;
- host memory of one idle wasm session (its sandbox-host, box init and interpreter runner: the
  sum of their proportional set sizes) against an idle native session with a Python context.

Usage: python3 benches/wasm.py AIRLOCK_BINARY
"""
import json, os, statistics, sys, time

from airlock_api import Server

exe = sys.argv[1]
N = 300


def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def pss_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


server = Server(exe)
call = server.call
results = {}
try:
    for backend in ["wasm", "native"]:
        before = set(descendants(server.pid))
        sid = json.loads(call("POST", "/v1/sandboxes", {"backend": backend}))["id"]

        def code(src):
            lines = [json.loads(l) for l in call("POST", f"/v1/sandboxes/{sid}/code", {"code": src}).decode().splitlines()]
            assert lines[-1]["type"] == "end" and lines[-1]["status"] == "ok", lines
            return lines

        for _ in range(20):
            code("1+1")
        times = []
        for _ in range(N):
            t = time.perf_counter()
            out = code("1+1")
            times.append((time.perf_counter() - t) * 1000)
        assert any(l.get("type") == "result" and l["data"]["text/plain"] == "2" for l in out), out
        time.sleep(1)
        session = [p for p in descendants(server.pid) if p not in before]
        results[backend] = (statistics.median(times), statistics.quantiles(times, n=20)[-1], pss_kib(session), len(session))
        call("DELETE", f"/v1/sandboxes/{sid}")
finally:
    server.stop()

(w_med, w_p95, w_pss, w_n), (n_med, n_p95, n_pss, n_n) = results["wasm"], results["native"]
print(f"warm 1+1, wasm box:   median {w_med:.3f} ms, p95 {w_p95:.3f} ms")
print(f"warm 1+1, native box: median {n_med:.3f} ms, p95 {n_p95:.3f} ms")
print(f"ratio wasm / native (median): {w_med / n_med:.2f}x")
print(f"idle session with a Python context, host memory (PSS): wasm {w_pss / 1024:.1f} MiB in {w_n} processes, native {n_pss / 1024:.1f} MiB in {n_n} processes")
