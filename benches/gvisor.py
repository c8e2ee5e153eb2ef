"""Figures for the gVisor backend; see benches/gvisor.sh."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from airlock_api import Server  # noqa: E402

exe, runs = sys.argv[1], int(sys.argv[2])
# The runsc airlock uses (AIRLOCK_RUNSC, as scripts/test.sh and benches/gvisor.sh set it), else
# runsc on PATH; the platform is the one airlock picks for it (`airlock check` says which).
runsc = os.environ.get("AIRLOCK_RUNSC") or shutil.which("runsc") or sys.exit(
    "runsc is not installed (scripts/gvisor-runsc.sh, or apt-get install runsc)")
os.environ["AIRLOCK_RUNSC"] = runsc
check = subprocess.run([exe, "check"], capture_output=True, text=True).stdout
gv = next((l for l in check.splitlines() if l.strip().startswith("gvisor")), "")
if "available" not in gv:
    sys.exit(f"airlock cannot run gVisor boxes here: {gv or check}")
platform = "systrap" if "platform systrap" in gv else "ptrace"
flags = subprocess.run([runsc, "flags"], capture_output=True, text=True)
# airlock turns directfs off (crates/airlock-gvisor/src/runsc.rs): the peer does too.
directfs = ["--directfs=false"] if "-directfs" in flags.stdout + flags.stderr else []
version = subprocess.run([runsc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"{version}, platform {platform}{', directfs off' if directfs else ''}")


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
        subprocess.run([runsc, f"--root={root}", f"--platform={platform}", "--network=none",
                        *directfs, "do", "/bin/true"], check=True, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(root, ignore_errors=True)


ws = tempfile.mkdtemp(prefix="airlock-bench-ws-")


def airlock_run():
    subprocess.run([exe, "run", "--backend", "gvisor", "--workspace", ws, "--no-stdin", "--",
                    "/bin/true"], check=True, stdin=subprocess.DEVNULL)


def interleaved(a, b, n):
    """Medians of a and b, run alternately so both see the same machine load."""
    ta, tb = [], []
    for _ in range(n):
        ta.append(median_ms(a, 1))
        tb.append(median_ms(b, 1))
    return statistics.median(ta), statistics.median(tb)


for _ in range(3):  # warm-up
    runsc_do()
    airlock_run()
p, o = interleaved(runsc_do, airlock_run, runs)
print(f"runsc do /bin/true ({platform}):                       median {p:7.1f} ms")
print(f"airlock run --backend gvisor -- /bin/true:            median {o:7.1f} ms")
print(f"ratio airlock run / runsc do:                         {o / p:.2f}x (goal <= 1.1x)")

srv = Server(exe)
try:
    def exec_(sid, cmd):
        out = srv.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd}).decode()
        end = json.loads(out.strip().splitlines()[-1])
        if end.get("exit_code") != 0:
            raise RuntimeError(f"{cmd}: {out[:300]}")
        return out

    def box_true(backend):
        sid = json.loads(srv.call("POST", "/v1/sandboxes", {"backend": backend}))["id"]
        exec_(sid, ["/bin/true"])
        srv.call("DELETE", f"/v1/sandboxes/{sid}")

    for _ in range(3):  # warm-up
        box_true("gvisor")
    p, o = interleaved(runsc_do, lambda: box_true("gvisor"), runs)
    print(f"runsc do /bin/true ({platform}):                       median {p:7.1f} ms")
    print(f"airlock gvisor box: create + exec /bin/true + delete: median {o:7.1f} ms")
    print(f"ratio API box / runsc do:                             {o / p:.2f}x")

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

    # Pause (runsc checkpoint, memory given back) and resume (runsc restore) to the first
    # output of a command; the pause snapshot's size.
    sid = boxes["gvisor"]
    pause_ms, resume_ms, sizes = [], [], []
    for _ in range(max(3, runs // 3)):
        t = time.perf_counter()
        paused = json.loads(srv.call("POST", f"/v1/sandboxes/{sid}/pause", {"memory": True}))
        pause_ms.append((time.perf_counter() - t) * 1000)
        if paused.get("kept", {}).get("resident") is not False:
            sys.exit(f"the pause kept the box resident (no checkpoint under this runsc?): {paused}")
        snaps = json.loads(srv.call("GET", f"/v1/sandboxes/{sid}/snapshots"))["snapshots"]
        sizes += [s["bytes"] for s in snaps if s.get("purpose") == "pause"]
        t = time.perf_counter()
        srv.call("POST", f"/v1/sandboxes/{sid}/resume")
        if "resumed" not in exec_(sid, ["echo", "resumed"]):
            sys.exit("the resumed box did not answer")
        resume_ms.append((time.perf_counter() - t) * 1000)
    size = f", snapshot {statistics.median(sizes) / 2**20:.1f} MiB" if sizes else ""
    print(f"gvisor pause (runsc checkpoint): median {statistics.median(pause_ms):.0f} ms{size}")
    print(f"gvisor resume -> first output:   median {statistics.median(resume_ms):.0f} ms "
          f"(E2B documents ~1 s)")
    for sid in boxes.values():
        srv.call("DELETE", f"/v1/sandboxes/{sid}")
finally:
    srv.stop()
    shutil.rmtree(ws, ignore_errors=True)
