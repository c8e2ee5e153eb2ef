"""Warm pools (issue 22), same run: two servers, one with pools and one without, driven in
turns so load on the machine falls on both alike, next to a plain fork+exec.

- native: API create -> first line of the first command's output (goal <= 2 ms with a pool);
- E2B's Python SDK: Sandbox.create() + commands.run("true") + kill() (goal <= 10 ms), when run
  with the E2B venv's python (benches/pool.sh does);
- gVisor and microVM: API create (to its 201) and create -> first output (goal <= 20 ms).

Every pooled create is made once the pools are full again, so each one is a hit (checked).
Usage: python3 benches/pool.py AIRLOCK_BINARY [ROUNDS] [--json OUT]   (default 40; gVisor and
microVM run ROUNDS/4 and ROUNDS/8; --json writes every sample, for benches/report.py)
"""
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_api import Server

argv = sys.argv[1:]
json_out = None
if "--json" in argv:
    i = argv.index("--json")
    json_out = argv[i + 1]
    del argv[i:i + 2]
exe = argv[0]
rounds = int(argv[1]) if len(argv) > 1 else 40
# Every sample (ms), for --json.
series, skipped = [], []
POOLS = ["native:size=4", "native:size=4,network=proxy", "gvisor:size=2", "microvm:size=1,memory=256M"]
args = [a for p in POOLS for a in ("--pool", p)]
pooled_server = Server(exe, *args)
plain_server = Server(exe)
GVISOR = {"backend": "gvisor"}
MICROVM = {"backend": "microvm", "policy": {"limits": {"memory": "256M"}}}


def pools():
    return {p["name"]: p for p in json.loads(pooled_server.call("GET", "/v1/pools"))["pools"]}


def wait_full():
    deadline = time.time() + 120
    while any(p["ready"] < p["size"] for p in pools().values()):
        if time.time() > deadline:
            sys.exit(f"the pools did not refill: {pools()}")
        time.sleep(0.005)


def ms(t):
    return (time.perf_counter() - t) * 1000


def first_output(server, body):
    """(ms to the create's answer, ms to the first line of the first command's output, ms of
    the delete that follows)."""
    t = time.perf_counter()
    sid = json.loads(server.call("POST", "/v1/sandboxes", body))["id"]
    created = ms(t)
    server.conn.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"cmd": ["echo", "hi"]}),
                        headers=server.auth)
    r = server.conn.getresponse()
    first = r.readline()
    while first and b'"stdout"' not in first:  # the `start` line comes first
        first = r.readline()
    took = ms(t)
    rest = r.read()
    assert b"hi" in first, (first, rest)
    t = time.perf_counter()
    server.call("DELETE", f"/v1/sandboxes/{sid}")
    return created, took, ms(t)


def plain(n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["/bin/echo", "hi"], check=True, stdout=subprocess.DEVNULL)
        out.append(ms(t))
    series.append({"name": "plain fork+exec of echo", "kind": "peer", "samples": out})
    return statistics.median(out)


def med(xs):
    return statistics.median(xs)


def p90(xs):
    return sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]


def compare(name, body, n):
    with_pool, without = [], []
    for _ in range(n):
        wait_full()
        with_pool.append(first_output(pooled_server, body))
        without.append(first_output(plain_server, body))
    series.append({"name": f"{name}, with a pool", "kind": "airlock", "samples": [x[1] for x in with_pool]})
    series.append({"name": f"{name}, without", "kind": "peer", "samples": [x[1] for x in without]})
    for i, what in ((0, "create"), (1, "create -> first output"), (2, "delete (to its answer)")):
        a, b = [x[i] for x in with_pool], [x[i] for x in without]
        print(f"{name} {what}, median of {n}: with a pool {med(a):.2f} ms (p90 {p90(a):.2f}), "
              f"without {med(b):.2f} ms (p90 {p90(b):.2f}); {med(b) / med(a):.1f}x")
    return med([x[1] for x in with_pool])


def descendants_cpu_ms(root):
    """CPU time (user + system, ms) used so far by every process below `root`."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    kids = {}
    for i in range(0, len(out) - 1, 2):
        kids.setdefault(int(out[i + 1]), []).append(int(out[i]))
    todo, ticks = list(kids.get(root, [])), 0
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")


try:
    wait_full()
    # What the full pools' ready boxes cost while nobody uses them: every process below the
    # pooled server (its hosts, runsc and Sentries, QEMU), over 5 s.
    idle_from = descendants_cpu_ms(pooled_server.pid)
    time.sleep(5)
    idle = (descendants_cpu_ms(pooled_server.pid) - idle_from) / 5
    print(f"ready boxes while idle ({', '.join(POOLS)}): {idle:.1f} ms of CPU a second "
          f"({idle / 10:.2f} % of a core)")
    before = {k: p["hits"] for k, p in pools().items()}
    for server in (pooled_server, plain_server):  # warm both servers' paths once
        first_output(server, {})
    wait_full()
    native = compare("native", {}, rounds)
    fork = plain(200)
    print(f"plain fork+exec of echo {fork:.2f} ms; native with a pool / fork+exec {native / fork:.1f}x "
          f"(goal: with a pool <= 2 ms)")
    compare("gVisor", GVISOR, max(2, rounds // 4))
    compare("microVM", MICROVM, max(2, rounds // 8))
    try:
        import e2b  # noqa: F401 (present when run with the E2B venv's python)
    except ImportError:
        print("E2B SDK: not measured (run with the python of scripts/e2b-clients.sh, as benches/pool.sh does)")
        skipped.append({"name": "E2B SDK cycle", "why": "not run with the python of scripts/e2b-clients.sh"})
    else:
        for var in ("E2B_DOMAIN", "E2B_DEBUG", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            os.environ.pop(var, None)
        os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        from e2b import Sandbox

        def cycle(server):
            os.environ.update({"E2B_API_KEY": server.e2b_key(), "E2B_API_URL": server.base,
                               "E2B_SANDBOX_URL": server.base})
            t, cpu = time.perf_counter(), time.process_time()
            sbx = Sandbox.create()
            sbx.commands.run("true")
            sbx.kill()
            took = ms(t)
            client_cpu.append((time.process_time() - cpu) * 1000)
            return took

        client_cpu = []

        cycle(pooled_server), cycle(plain_server)
        a, b = [], []
        for _ in range(rounds):
            wait_full()
            a.append(cycle(pooled_server))
            b.append(cycle(plain_server))
        series.append({"name": "E2B SDK create+run+kill, with a pool", "kind": "airlock", "samples": a})
        series.append({"name": "E2B SDK create+run+kill, without", "kind": "peer", "samples": b})
        print(f"E2B SDK create + run('true') + kill, median of {rounds}: with a pool {med(a):.2f} ms "
              f"(p90 {p90(a):.2f}), without {med(b):.2f} ms (p90 {p90(b):.2f}); {med(b) / med(a):.1f}x "
              f"(goal: with a pool <= 10 ms)")
        print(f"E2B SDK cycle: the SDK's own CPU time in this process, median {med(client_cpu):.2f} ms a cycle "
              f"(both servers' cycles)")
    after = pools()
    misses = {k: p["misses"] for k, p in after.items() if p["misses"]}
    assert not misses, f"every pooled create must be a hit: {after}"
    print("pool hits:", {k: p["hits"] - before[k] for k, p in after.items()})
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"series": series, "skipped": skipped}, f)
finally:
    pooled_server.stop()
    plain_server.stop()
