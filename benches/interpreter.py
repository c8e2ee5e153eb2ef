"""Code-interpreter figures (issue 5): a warm `1+1` in Python through `airlock serve`
(POST /v1/sandboxes/{id}/code, full NDJSON stream read) against the same execution sent to a warm
IPython kernel through jupyter_client, in the same run; and context creation through the API.

Usage: python3 benches/interpreter.py AIRLOCK_BINARY   (run with a Python that has
jupyter_client and ipykernel, e.g. the venv benches/interpreter.sh makes)
"""
import http.client, json, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

from jupyter_client.manager import start_new_kernel

exe = sys.argv[1]
N = 300
data = tempfile.mkdtemp(prefix="airlock-interp-bench-")
server = subprocess.Popen([exe, "serve", "--listen", "127.0.0.1:0", "--data-dir", data], stdout=subprocess.PIPE, text=True)
key = addr = None
while key is None or addr is None:
    line = server.stdout.readline()
    if not line:
        sys.exit("the server did not start")
    line = line.strip()
    if line.startswith("api key: "):
        key = line[len("api key: "):]
    if line.startswith("listening on http://"):
        addr = line[len("listening on http://"):]
host, port = addr.rsplit(":", 1)
conn = http.client.HTTPConnection(host, int(port), timeout=60)
conn.connect()
conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def call(method, path, body=None):
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=auth)
    r = conn.getresponse()
    payload = r.read()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {payload[:300]!r}")
    return payload


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
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(data, ignore_errors=True)
