"""Ports: `sandbox.get_host(port)` names `{port}-{sandboxID}.{domain}` under the domain the server
was started with (`airlock serve --e2b-domain localhost`), and a request with that Host reaches
the server listening on that port inside the box, HTTP and WebSocket, through `airlock serve`
(over the box's agent connection, not a network the box has). E2B's traffic rules hold:
`allow_public_traffic=False` takes only requests with the sandbox's traffic token.

The client side speaks to the server's own address with the Host header set (Debian's resolver
does not resolve `*.localhost`; curl and browsers do): exactly what such a client sends."""
import base64
import http.client
import os
import pathlib
import socket
import struct
import time
import urllib.parse

WS_ECHO = (pathlib.Path(__file__).parent.parent / "ws_echo.py").read_text()
PORT = 8000


def gateway():
    url = urllib.parse.urlparse(os.environ["E2B_API_URL"])
    return url.hostname, url.port


def get(host, path="/", headers=None):
    """GET through the server with Host `host`: (status, body text)."""
    conn = http.client.HTTPConnection(*gateway(), timeout=20)
    try:
        conn.request("GET", path, headers={"Host": host, **(headers or {})})
        res = conn.getresponse()
        return res.status, res.read().decode(errors="replace")
    finally:
        conn.close()


def until_up(host, path="/", headers=None, seconds=20):
    """GETs until the box's server answers something other than the 502 of a closed port."""
    deadline = time.time() + seconds
    while True:
        status, body = get(host, path, headers)
        if status != 502 or time.time() > deadline:
            return status, body
        time.sleep(0.2)


async def serve_site(sdk, sbx, secret):
    await sdk(sbx.files.write, "/home/user/site/secret.txt", secret)
    await sdk(
        sbx.commands.run,
        f"python3 -m http.server {PORT} --bind 127.0.0.1 --directory /home/user/site",
        background=True,
    )


async def test_get_host_reaches_a_server_in_the_box(sdk):
    async with sdk.sandbox() as sbx:
        host = sbx.get_host(PORT)
        assert host == f"{PORT}-{sbx.sandbox_id}.localhost", host
        secret = os.urandom(8).hex()
        await serve_site(sdk, sbx, secret)
        status, body = until_up(host, "/secret.txt")
        assert (status, body) == (200, secret)
        # The client may name the server's port in Host, as a browser does.
        status, body = get(f"{host}:{gateway()[1]}", "/secret.txt")
        assert (status, body) == (200, secret)


def ws_roundtrip(host, message, headers=None):
    """Opens a WebSocket through the server with Host `host`, sends `message`, returns the
    status line and the first message back."""
    sock = socket.create_connection(gateway(), timeout=20)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        sock.sendall(
            (
                f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
            ).encode()
        )
        f = sock.makefile("rb")
        status = f.readline().decode().strip()
        while f.readline() not in (b"\r\n", b""):
            pass
        if " 101 " not in status + " ":
            return status, None
        mask = os.urandom(4)
        payload = message.encode()
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
        h = f.read(2)
        n = h[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", f.read(2))[0]
        return status, f.read(n).decode()
    finally:
        sock.close()


async def test_a_websocket_echo_in_the_box(sdk):
    async with sdk.sandbox() as sbx:
        await sdk(sbx.files.write, "/home/user/ws_echo.py", WS_ECHO)
        await sdk(sbx.commands.run, f"python3 /home/user/ws_echo.py {PORT}", background=True)
        host = sbx.get_host(PORT)
        deadline = time.time() + 20
        while True:
            status, echoed = ws_roundtrip(host, "hello box")
            if echoed is not None or time.time() > deadline:
                break
            time.sleep(0.2)
        assert status.startswith("HTTP/1.1 101"), status
        assert echoed == "echo:hello box"


async def test_another_box_and_a_closed_port_are_not_reached(sdk):
    """An attack: a request naming box B's port 8000 must not reach box A's server on 8000, nor
    anything else; a port nothing listens on is E2B's 502."""
    async with sdk.sandbox() as a, sdk.sandbox() as b:
        secret = os.urandom(8).hex()
        await serve_site(sdk, a, secret)
        status, body = until_up(a.get_host(PORT), "/secret.txt")
        assert (status, body) == (200, secret)
        status, body = get(b.get_host(PORT), "/secret.txt")
        assert status == 502, (status, body)
        assert "port is not open" in body and secret not in body, body
        status, body = get(a.get_host(PORT + 1), "/secret.txt")
        assert status == 502 and "port is not open" in body, (status, body)
        # A name under the domain that is no sandbox.
        status, body = get(f"{PORT}-nosuchsandbox.localhost", "/secret.txt")
        assert status == 502 and secret not in body, (status, body)


async def test_private_traffic_needs_the_token(sdk):
    async with sdk.sandbox(network={"allow_public_traffic": False}) as a, sdk.sandbox() as b:
        token = a.traffic_access_token
        assert token, "a sandbox without public traffic has a traffic token"
        assert (await sdk(a.get_info)).network["allow_public_traffic"] is False
        assert (await sdk(b.get_info)).network["allow_public_traffic"] is True
        secret = os.urandom(8).hex()
        await serve_site(sdk, a, secret)
        host = a.get_host(PORT)
        header = "e2b-traffic-access-token"
        status, body = until_up(host, "/secret.txt", {header: token})
        assert (status, body) == (200, secret)
        for sent in ({}, {header: "wrong"}, {header: b.traffic_access_token or "none"}):
            status, body = get(host, "/secret.txt", sent)
            assert status == 403 and secret not in body, (sent, status, body)
        status, echoed = ws_roundtrip(host, "x")
        assert " 403 " in status + " " and echoed is None, status


async def test_mask_request_host_is_the_host_the_box_sees(sdk):
    async with sdk.sandbox(network={"mask_request_host": "${PORT}-myapp.example.com"}) as sbx:
        # A server that answers with the Host it was asked for.
        await sdk(sbx.files.write, "/home/user/host.py", HOST_ECHO)
        await sdk(sbx.commands.run, f"python3 /home/user/host.py {PORT}", background=True)
        status, body = until_up(sbx.get_host(PORT))
        assert (status, body) == (200, f"host={PORT}-myapp.example.com")


HOST_ECHO = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("host=" + self.headers["Host"]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
