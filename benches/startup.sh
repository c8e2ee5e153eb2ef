#!/usr/bin/env bash
# Startup benchmark: `airlock run -- /bin/true` with every layer on, against bubblewrap in the
# same run. bubblewrap gets comparable isolation: every namespace, no capabilities, the same
# mounts airlock plans for this workspace (taken from `airlock receipt --json`: read-only system
# dirs and /etc entries, the workspace, protected paths, /proc, /dev, tmpfs /tmp and home). It has
# no seccomp filter, no Landlock and no cgroup: those are airlock's extra layers. Also samples the
# supervisor's peak RSS.
# A box on a template (`--template`, a small image this script makes: /bin/true and its
# libraries) is measured against the minimal bubblewrap: one overlay root instead of ~40 binds.
# Usage: benches/startup.sh [RUNS]   (needs bwrap and hyperfine: scripts/test.sh installs them)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs=${1:-300}
cargo build --release --locked -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/airlock
ws=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
bwrap_cmd=$("$bin" receipt --json | python3 "$repo/benches/bwrap_peer.py" /bin/true)
eval "$bwrap_cmd" || { echo "the bwrap peer command failed: $bwrap_cmd" >&2; exit 1; }
python3 "$repo/benches/template_image.py" "$ws/image" true
"$bin" template import --data-dir "$ws/data" --name bench "$ws/image" >/dev/null
out=$ws/hyperfine.json
hyperfine -N --warmup 30 --runs "$runs" --export-json "$out" \
  -n airlock "$bin run --no-stdin -- /bin/true" \
  -n airlock-template "$bin run --no-stdin --data-dir $ws/data --template bench --workspace none -- /bin/true" \
  -n bwrap "$bwrap_cmd" \
  -n bwrap-minimal "bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true" \
  >/dev/null
# A start after an idle spell (50 ms, as when an agent runs a command now and then, not back to
# back): caches are cold, and so are the kernel's lazily synchronised locks (moving a process
# into a cgroup waits for an RCU grace period then). Both get the same pause.
cold=$ws/hyperfine-cold.json
hyperfine -N --warmup 5 --runs $(( (runs + 2) / 3 )) --prepare 'sleep 0.05' --export-json "$cold" \
  -n airlock "$bin run --no-stdin -- /bin/true" \
  -n bwrap "$bwrap_cmd" \
  >/dev/null
python3 - "$out" "$bin" "$cold" <<'PY'
import json, subprocess, sys, time
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
cold = {r["command"]: r for r in json.load(open(sys.argv[3]))["results"]}
a, b = res["airlock"]["median"] * 1000, res["bwrap"]["median"] * 1000
m = res["bwrap-minimal"]["median"] * 1000
print(f"startup median: airlock {a:.2f} ms, bwrap with the same mounts {b:.2f} ms, ratio {a / b:.2f}x (goal <= 1.5x)")
print(f"startup median: bwrap with only /usr, /proc, /dev, /tmp {m:.2f} ms, airlock / that {a / m:.2f}x")
t = res["airlock-template"]["median"] * 1000
print(f"startup median: airlock --template {t:.2f} ms, / minimal bwrap {t / m:.2f}x (goal <= 1.0x), / airlock on host {t / a:.2f}x")
ca, cb = cold["airlock"]["median"] * 1000, cold["bwrap"]["median"] * 1000
print(f"cold start (50 ms idle before each) median: airlock {ca:.2f} ms, bwrap with the same mounts {cb:.2f} ms, ratio {ca / cb:.2f}x")
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
