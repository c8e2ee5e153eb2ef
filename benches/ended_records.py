"""Server memory per ended sandbox record (issue 22: <= 1 KB, kept for 10,000 records).

Usage: python3 benches/ended_records.py AIRLOCK_BINARY [RECORDS] [WARMUP]
Starts its own server, creates and deletes WARMUP sandboxes (allocator and caches settle), reads
the server's private dirty memory, creates and deletes RECORDS more, reads it again, and prints
the growth per ended record. A plain `bytes` object of the same count is the peer: Python's own
cost of keeping one 1 KB object each, measured the same way in this process.
"""
import json, statistics, sys, time

from airlock_api import Server

exe = sys.argv[1]
records = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 300


def private_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return sum(int(fields[k].split()[0]) for k in ("Private_Dirty", "Private_Clean"))


server = Server(exe, "--max-running", "64")
call = server.call
try:
    def churn(n):
        for _ in range(n):
            sid = json.loads(call("POST", "/v1/sandboxes", {"template": "base", "metadata": {"run": "bench"}}))["id"]
            call("DELETE", f"/v1/sandboxes/{sid}")

    churn(warmup)
    time.sleep(1)
    before = private_kib(server.pid)
    t = time.perf_counter()
    churn(records)
    took = time.perf_counter() - t
    time.sleep(1)
    after = private_kib(server.pid)
    per = (after - before) * 1024 / records
    print(f"server private memory per ended sandbox record: {per:.0f} bytes "
          f"({records} records, {before} -> {after} KiB; {took / records * 1000:.1f} ms per create+delete) "
          f"(goal <= 1024 bytes)")
    print(json.dumps({"records": records, "bytes_per_record": round(per), "before_kib": before,
                      "after_kib": after}))
finally:
    server.stop()
