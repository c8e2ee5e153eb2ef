"""Figures for the gVisor backend; see benches/gvisor.sh."""
import json, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from airlock_api import Server  # noqa: E402

exe, runs = sys.argv[1], int(sys.argv[2])
runsc = shutil.which("runsc") or sys.exit("runsc is not installed (apt-get install runsc)")


def median_ms(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def runsc_do():
    root = tempfile.mkdtemp(prefix="airlock-bench-runsc-")
    try:
        subprocess.run([runsc, f"--root={root}", "--platform=ptrace", "--network=none",
                        "do", "/bin/true"], check=True, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(root, ignore_errors=True)


srv = Server(exe)
try:
    def exec_(sid, cmd):
        out = srv.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd}).decode()
        end = json.loads(out.strip().splitlines()[-1])
        if end.get("exit_code") != 0:
            raise RuntimeError(f"{cmd}: {out[:300]}")

    def box_true(backend):
        sid = json.loads(srv.call("POST", "/v1/sandboxes", {"backend": backend}))["id"]
        exec_(sid, ["/bin/true"])
        srv.call("DELETE", f"/v1/sandboxes/{sid}")

    for _ in range(3):  # warm-up
        runsc_do()
        box_true("gvisor")
    # Interleaved, so both see the same machine load.
    peer, ours = [], []
    for _ in range(runs):
        peer.append(median_ms(runsc_do, 1))
        ours.append(median_ms(lambda: box_true("gvisor"), 1))
    p, o = statistics.median(peer), statistics.median(ours)
    print(f"runsc do /bin/true (ptrace):                         median {p:7.1f} ms")
    print(f"airlock gvisor box: create + exec /bin/true + delete: median {o:7.1f} ms")
    print(f"ratio airlock / runsc do:                            {o / p:.2f}x (goal <= 1.1x)")

    boxes = {}
    for backend in ("gvisor", "native"):
        boxes[backend] = json.loads(srv.call("POST", "/v1/sandboxes", {"backend": backend}))["id"]
    for backend, sid in boxes.items():
        for _ in range(5):
            exec_(sid, ["/bin/true"])
    warm = {b: median_ms(lambda: exec_(sid, ["/bin/true"]), runs * 4) for b, sid in boxes.items()}
    print(f"warm exec /bin/true through the API: gvisor {warm['gvisor']:.2f} ms, native {warm['native']:.2f} ms "
          f"(goal <= 3 ms)")
    py = {b: median_ms(lambda: exec_(sid, ["python3", "-c", "pass"]), runs) for b, sid in boxes.items()}
    print(f"python3 -c pass: gvisor {py['gvisor']:.1f} ms, native {py['native']:.1f} ms, "
          f"ratio {py['gvisor'] / py['native']:.2f}x")
    for sid in boxes.values():
        srv.call("DELETE", f"/v1/sandboxes/{sid}")
finally:
    srv.stop()
