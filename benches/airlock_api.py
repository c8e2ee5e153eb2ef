"""A throwaway `airlock serve` for the benchmarks: started on 127.0.0.1:0 with a temporary data
directory, a keep-alive HTTP connection to it (TCP_NODELAY: http.client writes headers and body
separately, and Nagle's algorithm with the peer's delayed ACK would add ~40 ms to each request),
and stopped with SIGTERM at the end."""
import http.client, json, os, re, shutil, signal, socket, subprocess, sys, tempfile

# What a held buffer is filled with: a repeated byte (a migration stream or runsc's compression
# makes it almost nothing) or random bytes (nothing makes them smaller).
FILL = {"repeated": 'bytearray(b"x") * ({n} << 20)', "random": "bytearray(os.urandom({n} << 20))"}


class Server:
    def __init__(self, exe, *extra, data=None):
        # `data`: a data directory prepared by the caller (e.g. holding a template); removed at
        # the end like the temporary one.
        self.data = data or tempfile.mkdtemp(prefix="airlock-bench-")
        self.proc = subprocess.Popen([exe, "serve", "--listen", "127.0.0.1:0", "--data-dir", self.data, *extra],
                                     stdout=subprocess.PIPE, text=True)
        key = addr = None
        # Every line printed up to `listening on` (the E2B benchmark finds its key there).
        self.printed = []
        while key is None or addr is None:
            line = self.proc.stdout.readline()
            if not line:
                self.stop()
                sys.exit("the server did not start")
            line = line.strip()
            self.printed.append(line)
            if line.startswith("api key: "):
                key = line[len("api key: "):]
            if line.startswith("listening on http://"):
                addr = line[len("listening on http://"):]
        self.base = "http://" + addr
        host, port = addr.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.connect()
        self.auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def connect(self):
        """A new keep-alive connection. The server closes one that sends no request within its
        --header-timeout (10 s) of its opening, e.g. while another server's pools fill."""
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def pid(self):
        return self.proc.pid

    def call(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        try:
            self.conn.request(method, path, body=data, headers=self.auth)
            r = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # Closed by the server while idle (never mid-request: it sent nothing back).
            self.conn.close()
            self.connect()
            self.conn.request(method, path, body=data, headers=self.auth)
            r = self.conn.getresponse()
        payload = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {payload[:300]!r}")
        return payload

    def hold_memory(self, sid, mib, fill="repeated"):
        """Starts a Python process in box `sid` holding `mib` MiB of `fill` (see FILL), in the
        background, and returns once the buffer is full (at most 60 s)."""
        code = ("import os, time\\nb = " + FILL[fill].format(n=mib)
                + "\\nopen(\"/tmp/held\", \"w\").close()\\ntime.sleep(100000)")
        self.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": ["sh", "-c",
            f"printf '{code}' > /tmp/hold.py; python3 /tmp/hold.py >/dev/null 2>&1 & "
            "for i in $(seq 600); do [ -e /tmp/held ] && exit 0; sleep 0.1; done; exit 1"]})

    def e2b_key(self):
        """The E2B-format key the server printed on its first start (or wrote to its data dir)."""
        texts = list(self.printed)
        for name in os.listdir(self.data):
            path = os.path.join(self.data, name)
            if os.path.isfile(path) and os.path.getsize(path) < 4096:
                texts.append(open(path, errors="replace").read())
        for text in texts:
            found = re.search(r"\be2b_[0-9a-f]{40}\b", text)
            if found:
                return found.group(0)
        raise SystemExit(f"the server made no E2B key; it printed {self.printed}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)
