"""Pause with memory of a box holding N MiB, by what the memory holds (issue 19's "pause of a
box using 256 MiB <= 1 s on the memory backends"): a repeated byte (compresses to almost
nothing) against random bytes (does not compress at all), through the API of one server on the
host template, then a resume and a check that the holding process is back with its memory.
benches/lifecycle.py measures the same on the code-interpreter template with the repeated byte.

Usage: python3 benches/pause_data.py AIRLOCK_BINARY BACKEND [ROUNDS] [MIB]   (default 2, 256)
"""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_api import FILL, Server

exe, backend = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
mib = int(sys.argv[4]) if len(sys.argv) > 4 else 256
server = Server(exe, "--backend", backend)
print(f"machine: {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[0]}; {backend}, {mib} MiB held")
try:
    for kind in FILL:
        pauses, resumes, sizes = [], [], []
        for _ in range(rounds):
            body = {"backend": backend, "timeout": 600, "policy": {"limits": {"memory": f"{mib + 512}M"}}}
            sid = json.loads(server.call("POST", "/v1/sandboxes", body))["id"]
            server.hold_memory(sid, mib, kind)
            t = time.perf_counter()
            kept = json.loads(server.call("POST", f"/v1/sandboxes/{sid}/pause", {"memory": True}))["kept"]
            pauses.append((time.perf_counter() - t) * 1000)
            snaps = json.loads(server.call("GET", f"/v1/sandboxes/{sid}/snapshots"))["snapshots"]
            sizes.append(sum(x["bytes"] for x in snaps) / (1 << 20))
            t = time.perf_counter()
            server.call("POST", f"/v1/sandboxes/{sid}/resume")
            out = server.call("POST", f"/v1/sandboxes/{sid}/exec",
                              {"cmd": ["sh", "-c", "ps -o rss=,args= | grep '[h]old.py'"]}).decode()
            resumes.append((time.perf_counter() - t) * 1000)
            rss = [json.loads(l)["data"] for l in out.splitlines() if '"stdout"' in l]
            assert rss and int(rss[0].split()[0]) >= mib * 1024, f"the holder did not come back whole: {out}"
            server.call("DELETE", f"/v1/sandboxes/{sid}")
        print(f"{kind:8} bytes: pause {statistics.median(pauses):.0f} ms ({', '.join(f'{p:.0f}' for p in pauses)}), "
              f"{kept['mechanism']}, snapshot {statistics.median(sizes):.1f} MiB; resume + first command {statistics.median(resumes):.0f} ms")
finally:
    server.stop()
