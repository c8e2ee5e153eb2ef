"""Server memory per ended sandbox record (issue 22: <= 1 KB, kept for 10,000 records).

Usage: python3 benches/ended_records.py AIRLOCK_BINARY [RECORDS] [WARMUP]
Starts its own server, creates and deletes WARMUP sandboxes (allocator and caches settle), then
RECORDS more in two halves, reading the server's private memory (smaps_rollup) after each, and
prints the growth per ended record of each half. The goal itself is the peer: 1 KB a record.
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
    marks = [private_kib(server.pid)]
    t = time.perf_counter()
    for _ in range(2):
        churn(records // 2)
        time.sleep(1)
        marks.append(private_kib(server.pid))
    took = time.perf_counter() - t
    # Two halves: the second is the steady slope (the first may still include the allocator
    # and SQLite's page cache settling).
    halves = [(b - a) * 1024 / (records // 2) for a, b in zip(marks, marks[1:])]
    print(f"server private memory per ended sandbox record: {halves[1]:.0f} bytes in the second "
          f"half, {halves[0]:.0f} in the first ({records} records after {warmup}; KiB {marks}; "
          f"{took / records * 1000:.1f} ms per create+delete) (goal <= 1024 bytes)")
    print(json.dumps({"records": records, "bytes_per_record": [round(h) for h in halves],
                      "kib": marks}))
finally:
    server.stop()
