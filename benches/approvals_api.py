"""Approvals over the server's API (issue 21): what a held connection costs beyond the answer.

Usage: python3 benches/approvals_api.py AIRLOCK_BINARY [N]   (default 200)

A real `airlock serve` on 127.0.0.1, one native sandbox with `approval: on-request`, an origin
this script runs on 127.0.0.1 (the box reaches it as `held.test`, mapped with map_host: no DNS).
The box runs N curls in a row, each held by its proxy; this script polls
`GET /v1/sandboxes/{id}/approvals` and answers each with `POST …/approvals/{n}` (allow, once).
For each request it measures, on one clock:
  r = the answer's own latency: from just before the POST to its 200;
  d = from just before the POST to the box's request arriving at the origin.
The goal is d <= r + 1 ms: a held connection that is allowed costs no more than the answer's
own latency plus at most 1 ms. For scale, the same box's requests to an allowed name
(`open.test`, never held) are timed end to end in the same run.
"""
import http.client, http.server, json, socket, statistics, sys, threading, time

from airlock_api import Server

exe = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200

arrivals = {}


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        arrivals[self.path] = time.perf_counter()
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
port = origin.server_address[1]
threading.Thread(target=origin.serve_forever, daemon=True).start()

server = Server(exe)
call = server.call


def connection():
    host, p = server.base[len("http://"):].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(p), timeout=600)
    c.connect()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def exec_in(sid, script):
    """Runs `script` in the box on its own connection; returns its stdout."""
    c = connection()
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"cmd": ["sh", "-c", script]}),
              headers=server.auth)
    lines = c.getresponse().read().decode().splitlines()
    return "".join(json.loads(l).get("data", "") for l in lines if json.loads(l)["type"] == "stdout")


try:
    network = {
        "mode": "proxy",
        "allow_ip": ["127.0.0.1"],
        "allow_domain": [f"open.test:{port}"],
        "map_host": ["held.test=127.0.0.1", "open.test=127.0.0.1"],
        "approval": "on-request",
        "approval_timeout": "30s",
    }
    sid = json.loads(call("POST", "/v1/sandboxes", {"policy": {"network": network}}))["id"]

    # Allowed requests, never held: the box's own end-to-end time per request (curl's
    # time_total), for scale.
    out = exec_in(sid, f"for i in $(seq {n}); do curl -s -o /dev/null -w '%{{time_total}}\\n' "
                       f"http://open.test:{port}/o$i; done")
    allowed_ms = [float(x) * 1000 for x in out.split()]

    # Held requests, each answered over the API as soon as it is listed.
    box = threading.Thread(target=exec_in, args=(sid, f"for i in $(seq {n}); do curl -s -o /dev/null "
                                                     f"http://held.test:{port}/h$i; done"))
    box.start()
    rs, ds = [], []
    for i in range(1, n + 1):
        while True:
            pending = json.loads(call("GET", f"/v1/sandboxes/{sid}/approvals"))["approvals"]
            if pending:
                break
            time.sleep(0.0005)
        req = pending[0]
        t0 = time.perf_counter()
        call("POST", f"/v1/sandboxes/{sid}/approvals/{req['id']}", {"answer": "allow"})
        t1 = time.perf_counter()
        until = time.time() + 10
        while f"/h{i}" not in arrivals:
            if time.time() > until:
                sys.exit(f"request {i} never reached the origin")
            time.sleep(0.0001)
        rs.append((t1 - t0) * 1000)
        ds.append((arrivals[f"/h{i}"] - t0) * 1000)
    box.join()
    call("DELETE", f"/v1/sandboxes/{sid}")

    extra = sorted(d - r for d, r in zip(ds, rs))
    p90 = extra[int(len(extra) * 0.9)]
    print(f"{n} held requests answered over the API (allow, once):")
    print(f"  the answer's own latency (POST to its 200), median: {statistics.median(rs):.3f} ms")
    print(f"  POST to the request at the origin, median:          {statistics.median(ds):.3f} ms")
    print(f"  the second minus the first, median {statistics.median(extra):.3f} ms, "
          f"p90 {p90:.3f} ms (goal <= 1 ms)")
    print(f"  for scale, an allowed request end to end in the box (curl time_total), median: "
          f"{statistics.median(allowed_ms):.3f} ms")
finally:
    server.stop()
    origin.shutdown()
