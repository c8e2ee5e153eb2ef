"""Code-interpreter figures (issue 5): a warm `1+1` in Python through `airlock serve`
(POST /v1/sandboxes/{id}/code, full NDJSON stream read) against the same execution sent to a warm
IPython kernel through jupyter_client, in the same run; and context creation through the API.

Usage: python3 benches/interpreter.py AIRLOCK_BINARY   (run with a Python that has
jupyter_client and ipykernel, e.g. the venv benches/interpreter.sh makes)
"""
import json, statistics, sys, time

from jupyter_client.manager import start_new_kernel

from airlock_api import Server

exe = sys.argv[1]
N = 300
server = Server(exe)
call = server.call

try:
    sid = json.loads(call("POST", "/v1/sandboxes", {"template": "user"}))["id"]

    def code(src, context=None):
        body = {"code": src}
        if context:
            body["context"] = context
        lines = [json.loads(l) for l in call("POST", f"/v1/sandboxes/{sid}/code", body).decode().splitlines()]
        assert lines[-1]["type"] == "end" and lines[-1]["status"] == "ok", lines
        return lines

    # Context creation (a new context and its first execution).
    creates = []
    for _ in range(10):
        t = time.perf_counter()
        ctx = json.loads(call("POST", f"/v1/sandboxes/{sid}/contexts", {"language": "python"}))["id"]
        code("pass", ctx)
        creates.append((time.perf_counter() - t) * 1000)
        call("DELETE", f"/v1/sandboxes/{sid}/contexts/{ctx}")

    for _ in range(20):
        code("1+1")
    ours = []
    for _ in range(N):
        t = time.perf_counter()
        out = code("1+1")
        ours.append((time.perf_counter() - t) * 1000)
    assert any(l.get("type") == "result" and l["data"]["text/plain"] == "2" for l in out), out

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(20):
            kc.execute_interactive("1+1", timeout=30, output_hook=lambda msg: None)
        theirs = []
        for _ in range(N):
            t = time.perf_counter()
            reply = kc.execute_interactive("1+1", timeout=30, output_hook=lambda msg: None)
            theirs.append((time.perf_counter() - t) * 1000)
            assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"python context create + first execution through the API, median: {statistics.median(creates):.1f} ms (goal <= 100 ms)")
    print(f"warm 1+1: airlock serve /code {a:.3f} ms, IPython kernel via jupyter_client {b:.3f} ms, ratio {a / b:.2f}x (goals <= 2 ms and <= 1.0x)")
finally:
    server.stop()
