"""Warm pools (issue 22): API create -> first exec output with a pool and without one, in the
same run on the same server, next to a plain fork+exec.

Usage: python3 benches/pool.py AIRLOCK_BINARY [ROUNDS]   (default 40)
One server with `--pool native:size=4`. "With a pool" is a create that matches it (`{}`), made
once the pool is full again, so each one is a hit; "without" is the same create with a limit
the pool was not made with (pids), so it starts its own box the ordinary way. The two are
interleaved, so load on the machine falls on both alike.
"""
import json, statistics, subprocess, sys, time

from airlock_api import Server

exe = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
SIZE = 4
server = Server(exe, "--pool", f"native:size={SIZE}")
call = server.call


def pool():
    return json.loads(call("GET", "/v1/pools"))["pools"][0]


def wait_full():
    deadline = time.time() + 60
    while pool()["ready"] < SIZE:
        if time.time() > deadline:
            sys.exit(f"the pool did not refill: {pool()}")
        time.sleep(0.01)


def first_output(body):
    """ms from the create request to the first line of the first command's output."""
    t = time.perf_counter()
    sid = json.loads(call("POST", "/v1/sandboxes", body))["id"]
    server.conn.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"cmd": ["echo", "hi"]}),
                        headers=server.auth)
    r = server.conn.getresponse()
    first = r.readline()
    took = (time.perf_counter() - t) * 1000
    rest = r.read()
    assert b'"stdout"' in first and b"hi" in first, (first, rest)
    call("DELETE", f"/v1/sandboxes/{sid}")
    return took


def plain(n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["/bin/echo", "hi"], check=True, stdout=subprocess.DEVNULL)
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


try:
    wait_full()
    hits_before = pool()["hits"]
    pooled, ordinary = [], []
    for _ in range(rounds):
        wait_full()
        pooled.append(first_output({}))
        ordinary.append(first_output({"policy": {"limits": {"pids": 4000}}}))
    p = pool()
    assert p["hits"] - hits_before == rounds, f"every pooled create must be a hit: {p}"
    fork = plain(200)
    med_p, med_o = statistics.median(pooled), statistics.median(ordinary)
    print(f"create -> first exec output, median of {rounds}: with a pool {med_p:.2f} ms "
          f"(p90 {sorted(pooled)[int(rounds * 0.9) - 1]:.2f}), without {med_o:.2f} ms "
          f"(p90 {sorted(ordinary)[int(rounds * 0.9) - 1]:.2f}); plain fork+exec {fork:.2f} ms")
    print(f"ratios: without/with pool {med_o / med_p:.1f}x; with pool/fork+exec {med_p / fork:.1f}x "
          f"(goal: with a pool <= 2 ms)")
finally:
    server.stop()
