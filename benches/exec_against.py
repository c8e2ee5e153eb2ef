"""Exec paths of two airlocks in the same run (this build, "new", and another, "other"): two
servers of each side at once, driven in interleaved turns, the order alternating every round.

- native, with a pool: POST /v1/sandboxes (to its 201) and the first command's first output line
  (`echo hi`), the box deleted after (issue 22's create -> first output);
- native, without a pool: the same create;
- gVisor (when AIRLOCK_RUNSC is set): warm exec of /bin/true in one long-lived box per server.

Usage: python3 benches/exec_against.py NEW OTHER [ROUNDS]   (default 60)
"""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_api import Server

new, other = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
runsc = os.environ.get("AIRLOCK_RUNSC")
ms = lambda t: (time.perf_counter() - t) * 1000


def first_output(s, sid, argv):
    s.conn.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"cmd": argv}), headers=s.auth)
    r = s.conn.getresponse()
    line = r.readline()
    while line and b'"stdout"' not in line and b'"end"' not in line:
        line = r.readline()
    rest = r.read()
    assert r.status == 200, (line, rest)
    return line, rest


def pools_full(s):
    while any(p["ready"] < p["size"] for p in json.loads(s.call("GET", "/v1/pools"))["pools"]):
        time.sleep(0.005)


servers = {}
for name, exe in (("new", new), ("other", other)):
    extra = ["--runsc", runsc] if runsc else []
    servers[name] = {
        "pooled": Server(exe, "--pool", "native:size=4", *extra),
        "plain": Server(exe, *extra),
    }
gvisor = {}
if runsc:
    for name, side in servers.items():
        s = side["plain"]
        gvisor[name] = json.loads(s.call("POST", "/v1/sandboxes", {"backend": "gvisor"}))["id"]
        for _ in range(5):
            first_output(s, gvisor[name], ["/bin/true"])

samples = {n: {"pool create": [], "pool create -> first output": [], "create without a pool": [],
               "gVisor warm exec": []} for n in servers}
try:
    for i in range(rounds):
        order = ["new", "other"] if i % 2 == 0 else ["other", "new"]
        for name in order:
            s = servers[name]["pooled"]
            pools_full(s)
            t = time.perf_counter()
            sid = json.loads(s.call("POST", "/v1/sandboxes", {}))["id"]
            created = ms(t)
            line, _ = first_output(s, sid, ["echo", "hi"])
            both = ms(t)
            assert b"hi" in line, line
            s.call("DELETE", f"/v1/sandboxes/{sid}")
            samples[name]["pool create"].append(created)
            samples[name]["pool create -> first output"].append(both)
            p = servers[name]["plain"]
            t = time.perf_counter()
            sid = json.loads(p.call("POST", "/v1/sandboxes", {}))["id"]
            samples[name]["create without a pool"].append(ms(t))
            p.call("DELETE", f"/v1/sandboxes/{sid}")
            if name in gvisor:
                t = time.perf_counter()
                first_output(p, gvisor[name], ["/bin/true"])
                samples[name]["gVisor warm exec"].append(ms(t))
finally:
    for name, side in servers.items():
        if name in gvisor:
            side["plain"].call("DELETE", f"/v1/sandboxes/{gvisor[name]}")
        for s in side.values():
            s.stop()

print(f"new = {new}\nother = {other}\n{rounds} rounds, interleaved, order alternating; medians (p90)")
for fig in samples["new"]:
    if not samples["new"][fig]:
        continue
    med = {n: statistics.median(samples[n][fig]) for n in samples}
    p90 = {n: sorted(samples[n][fig])[int(len(samples[n][fig]) * 0.9)] for n in samples}
    print(f"{fig:30} new {med['new']:7.2f} ms ({p90['new']:.2f})   other {med['other']:7.2f} ms "
          f"({p90['other']:.2f})   new/other {med['new'] / med['other']:.3f}")
