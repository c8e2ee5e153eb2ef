#!/usr/bin/env bash
# Egress proxy benchmark, as ratios against a direct connection in the same run, all on
# 127.0.0.1 (names come from a fixed table or --map-host, never DNS):
#  (a) throughput of a 1 GiB transfer through a CONNECT tunnel vs direct   (goal >= 0.9x),
#      then the same with the sender, receiver and relay pinned to CPUs both ways (diagnostic)
#  (b) added latency of a small request through the proxy vs direct      (goal <= 0.3 ms)
#  (c) 500 concurrent CONNECT tunnels, each echoing: library proxy, then from inside a real box
#  (d) startup: `airlock run --net proxy` vs `airlock run` vs bubblewrap    (goal proxy <= 2x bwrap);
#      bubblewrap both with airlock's mounts (benches/bwrap_peer.py) and with a minimal root
# (a)-(c) use crates/airlock-proxy/examples/proxy_bench.rs; (d) needs hyperfine and bwrap.
# Usage: benches/proxy.sh [RUNS]   (RUNS for hyperfine, default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs=${1:-200}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q
cargo build --release --locked -q -p airlock-proxy --example proxy_bench
bin=$PWD/$target/release/airlock
bench=$PWD/$target/release/examples/proxy_bench
case $target in /*) bin=$target/release/airlock; bench=$target/release/examples/proxy_bench ;; esac
ws=$(mktemp -d /tmp/airlock-proxybench-XXXXXX)
echo_pid=
cleanup() {
  if [ -n "$echo_pid" ]; then kill "$echo_pid" 2>/dev/null || true; fi
  rm -rf "$ws"
}
trap cleanup EXIT

# (a)-(c) against the library proxy.
timeout 600 "$bench" throughput $((1 << 30)) 21
if [ "$(nproc)" -ge 2 ]; then timeout 600 "$bench" placement $((1 << 30)) 9; fi
timeout 300 "$bench" latency 2000
timeout 300 "$bench" tunnels 500

# (c) from inside a box: 500 tunnels to svc.test:PORT through the box's proxy at 127.0.0.1:3128.
timeout 300 "$bench" echo-server 240 >"$ws/echo.port" &
echo_pid=$!
for _ in $(seq 100); do [ -s "$ws/echo.port" ] && break; sleep 0.05; done
port=$(head -n1 "$ws/echo.port")
cat >"$ws/tunnels.py" <<'PY'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 120
socks, failed = [], 0
for i in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(f"CONNECT svc.test:{port} HTTP/1.1\r\nHost: svc.test:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536 and time.monotonic() < deadline:
            chunk = s.recv(1)
            if not chunk:
                break
            head += chunk
        if head.startswith(b"HTTP/1.1 200 "):
            socks.append((i, s))
        else:
            failed += 1
            s.close()
    except OSError:
        failed += 1
ok = 0
payload = lambda i: f"tunnel {i} says hello {'x' * (i % 97)}".encode()
for i, s in socks:
    try:
        s.sendall(payload(i))
    except OSError:
        pass
for i, s in socks:
    want, got = payload(i), b""
    try:
        while len(got) < len(want) and time.monotonic() < deadline:
            chunk = s.recv(len(want) - len(got))
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    if got == want:
        ok += 1
    else:
        failed += 1
print(f"concurrent tunnels (from a box, python3 via 127.0.0.1:3128): {ok} ok, {failed} failed of {n}, all open at once (goal: {n} ok)")
PY
(cd "$ws" && timeout 300 "$bin" run --no-stdin --net proxy --map-host svc.test=127.0.0.1 \
  --allow-domain svc.test --allow-ip 127.0.0.1 -- python3 "$ws/tunnels.py" "$port" 500)
kill "$echo_pid" 2>/dev/null || true
wait "$echo_pid" 2>/dev/null || true
echo_pid=

# (d) startup with the proxy, without it, and bubblewrap.
bwrap_min="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true"
bwrap_same=$(cd "$ws" && "$bin" receipt --json | python3 "$repo/benches/bwrap_peer.py" /bin/true)
for cmd in "$bwrap_min" "$bwrap_same"; do
  (cd "$ws" && eval "$cmd") || { echo "the bwrap peer command failed: $cmd" >&2; exit 1; }
done
out=$ws/hyperfine.json
(cd "$ws" && hyperfine -N --warmup 20 --runs "$runs" --export-json "$out" \
  -n airlock-proxy "$bin run --no-stdin --net proxy -- /bin/true" \
  -n airlock "$bin run --no-stdin -- /bin/true" \
  -n bwrap "$bwrap_same" \
  -n bwrap-minimal "$bwrap_min" >/dev/null)
cp "$out" "${PROXY_BENCH_JSON:-/tmp/airlock-proxy-startup.json}"
python3 - "$out" <<'PY'
import json, sys
res = {r["command"]: r["median"] * 1000 for r in json.load(open(sys.argv[1]))["results"]}
p, a, b, m = res["airlock-proxy"], res["airlock"], res["bwrap"], res["bwrap-minimal"]
print(f"startup median: airlock --net proxy {p:.2f} ms, airlock {a:.2f} ms, bwrap with airlock's mounts {b:.2f} ms, minimal bwrap {m:.2f} ms")
print(f"startup ratio: --net proxy / bwrap with the same mounts {p / b:.2f}x (goal <= 2x); / minimal bwrap {p / m:.2f}x; --net proxy / airlock {p / a:.2f}x")
PY
