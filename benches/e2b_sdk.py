"""E2B SDK figures for `airlock serve` (issue 6), through E2B's own Python SDK (e2b 2.63.0 +
e2b-code-interpreter 2.11.5, from scripts/e2b-clients.sh), each next to the native API doing the
same work against the same server in the same run, so the SDK + gateway overhead is visible:

- `Sandbox.create()` + `commands.run("true")` + `kill()`, median (goal <= 50 ms); peer:
  `POST /v1/sandboxes` + `POST …/exec` of `true` + `DELETE` on one keep-alive connection;
- warm `run_code("1+1")`, median (goal <= 5 ms); peer: `POST /v1/sandboxes/{id}/code`.

Usage: PYTHON_OF_THE_E2B_VENV benches/e2b_sdk.py AIRLOCK_BINARY [ITERATIONS] [WARM_RUNS] [SAMPLES_JSON]
Starts its own server on 127.0.0.1 with a temporary data directory and stops it at the end.
With SAMPLES_JSON, every sample (ms) of the four figures is also written there, by figure
(benches/e2b_against.sh compares two binaries with them).
"""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_api import Server

exe = sys.argv[1]
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 40
warm_runs = int(sys.argv[3]) if len(sys.argv) > 3 else 300
samples_path = sys.argv[4] if len(sys.argv) > 4 else None
server = Server(exe, "--max-running", "64")


def e2b_key():
    return server.e2b_key()


call = server.call


def ms(t):
    return (time.perf_counter() - t) * 1000


def sdk_cycle():
    t = time.perf_counter()
    sbx = Sandbox.create()
    sbx.commands.run("true")
    sbx.kill()
    return ms(t)


def native_cycle():
    t = time.perf_counter()
    sid = json.loads(call("POST", "/v1/sandboxes", {"template": "base"}))["id"]
    end = json.loads(call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": ["true"]}).decode().splitlines()[-1])
    assert end["type"] == "end" and end["exit_code"] == 0, end
    call("DELETE", f"/v1/sandboxes/{sid}")
    return ms(t)


try:
    os.environ.update({"E2B_API_KEY": e2b_key(), "E2B_API_URL": server.base, "E2B_SANDBOX_URL": server.base,
                       "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    for var in ("E2B_DOMAIN", "E2B_DEBUG", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(var, None)
    # Imported after the environment the SDK reads is set.
    from e2b import Sandbox
    from e2b_code_interpreter import Sandbox as CodeSandbox

    for _ in range(3):
        sdk_cycle(), native_cycle()
    sdk, native = [], []
    # Interleaved, so both see the same machine state.
    for _ in range(iterations):
        sdk.append(sdk_cycle())
        native.append(native_cycle())
    cycle_native = native
    a, b = statistics.median(sdk), statistics.median(native)
    print(f"Sandbox.create() + commands.run('true') + kill() through the E2B Python SDK, median of {iterations}: "
          f"{a:.2f} ms; native API create + exec + delete {b:.2f} ms; SDK/gateway overhead {a - b:+.2f} ms (goal <= 50 ms)")

    sbx = CodeSandbox.create()
    sid = sbx.sandbox_id
    for _ in range(20):
        assert sbx.run_code("1+1").text == "2"

    def native_code():
        t = time.perf_counter()
        lines = call("POST", f"/v1/sandboxes/{sid}/code", {"code": "1+1"}).decode().splitlines()
        took = ms(t)
        assert any(json.loads(l).get("type") == "result" for l in lines), lines
        return took

    for _ in range(20):
        native_code()
    sdk_code, native = [], []
    for _ in range(warm_runs):
        t = time.perf_counter()
        sbx.run_code("1+1")
        sdk_code.append(ms(t))
        native.append(native_code())
    a, b = statistics.median(sdk_code), statistics.median(native)
    print(f"warm run_code('1+1') through the E2B Python SDK, median of {warm_runs}: {a:.3f} ms; "
          f"native POST /v1/sandboxes/{{id}}/code {b:.3f} ms; SDK/gateway overhead {a - b:+.3f} ms (goal <= 5 ms)")
    sbx.kill()
    if samples_path:
        with open(samples_path, "w") as f:
            json.dump({"sdk create+run+kill": sdk, "native create+exec+delete": cycle_native,
                       "sdk run_code": sdk_code, "native /code": native}, f)
finally:
    server.stop()
