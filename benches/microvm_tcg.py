"""What TCG's empty translation cache costs a restored microVM box (issues 16 and 19).

A microVM box starts by restoring its template's snapshot into a new QEMU process, and under TCG
(no usable KVM here) that process has translated none of the guest's code yet: the guest
kernel's fork, exec and fault paths, the agent and the command are translated anew on their
first run. This measures, through the API of one server (no pool): the create (restore, to its
201), then the same command run N times in the new box, each timed to its end; then a pause
with memory and a resume (a new QEMU again) followed by N more. A cold translation cache shows
as a first command far slower than the ones after it, which run the same code in the same VM.

Usage: python3 benches/microvm_tcg.py AIRLOCK_BINARY [ROUNDS] [COMMANDS]   (default 5, 4)
"""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_api import Server

exe = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
commands = int(sys.argv[3]) if len(sys.argv) > 3 else 4
server = Server(exe)
BODY = {"backend": "microvm", "policy": {"limits": {"memory": "256M"}}}


def ms(t):
    return (time.perf_counter() - t) * 1000


def run(sid):
    t = time.perf_counter()
    server.conn.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"cmd": ["echo", "hi"]}),
                        headers=server.auth)
    r = server.conn.getresponse()
    out = r.read()
    assert r.status == 200 and b"hi" in out, (r.status, out[:300])
    return ms(t)


created, after_create, resumed, after_resume = [], [[] for _ in range(commands)], [], [[] for _ in range(commands)]
try:
    for _ in range(rounds):
        t = time.perf_counter()
        sid = json.loads(server.call("POST", "/v1/sandboxes", BODY))["id"]
        created.append(ms(t))
        for i in range(commands):
            after_create[i].append(run(sid))
        server.call("POST", f"/v1/sandboxes/{sid}/pause", {"memory": True})
        t = time.perf_counter()
        server.call("POST", f"/v1/sandboxes/{sid}/resume", {})
        resumed.append(ms(t))
        for i in range(commands):
            after_resume[i].append(run(sid))
        server.call("DELETE", f"/v1/sandboxes/{sid}")
finally:
    server.stop()

med = statistics.median
print(f"machine: {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[0]}; medians of {rounds}, ms")
print(f"create (restore from the template snapshot, to its 201): {med(created):.1f}")
print("after the create, `echo hi` to its end: " + ", ".join(f"#{i + 1} {med(x):.1f}" for i, x in enumerate(after_create)))
print(f"resume (restore from the pause's snapshot, to its answer): {med(resumed):.1f}")
print("after the resume, `echo hi` to its end: " + ", ".join(f"#{i + 1} {med(x):.1f}" for i, x in enumerate(after_resume)))
first, later = med(after_create[0]), med([v for x in after_create[1:] for v in x])
print(f"first command / later ones: {first:.1f} / {later:.1f} ms: the first pays {first - later:.1f} ms for a cold translation cache")
