#!/usr/bin/env bash
# Startup benchmark: `airlock run -- /bin/true` with every layer on, against bubblewrap with
# comparable isolation (all namespaces, read-only /usr, the workspace bound, new /proc, /dev and
# tmpfs /tmp and home), in the same run; plus the supervisor's peak RSS.
# Usage: benches/startup.sh [RUNS]   (needs bwrap and hyperfine: scripts/test.sh installs them)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
cargo build --release --locked -q
bin=$PWD/target/release/airlock
ws=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
out=$ws/hyperfine.json
hyperfine -N --warmup 20 --runs "$runs" --export-json "$out" \
  -n airlock "$bin run --no-stdin -- /bin/true" \
  -n bwrap "bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --ro-bind /etc/ld.so.cache /etc/ld.so.cache --tmpfs /tmp --tmpfs /home --bind $ws $ws --proc /proc --dev /dev --chdir $ws /bin/true" \
  >/dev/null
python3 - "$out" "$bin" <<'PY'
import json, subprocess, sys, time
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
a, b = res["airlock"]["median"] * 1000, res["bwrap"]["median"] * 1000
print(f"startup median: airlock {a:.2f} ms, bwrap {b:.2f} ms, ratio {a / b:.2f}x (goal <= 1.5x)")
# Supervisor peak RSS: sample VmHWM of the airlock process while its box sleeps.
p = subprocess.Popen([sys.argv[2], "run", "--no-stdin", "--", "sleep", "1"])
time.sleep(0.6)
hwm = 0
for line in open(f"/proc/{p.pid}/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1])
p.wait()
print(f"supervisor peak RSS: {hwm / 1024:.2f} MiB (goal <= 10 MiB)")
PY
