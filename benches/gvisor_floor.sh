#!/usr/bin/env bash
# The floor under a gVisor box's warm exec (issue 15's goal: <= 3 ms through the API): a plain
# fork+exec of /bin/true made by Python *inside* a gVisor box, on each platform this runsc and
# host can run, next to the same loop on the host in the same run. airlock's own exec path adds
# to this floor; it cannot go below it.
# Usage: benches/gvisor_floor.sh [RUNS]   (default 20; as root). The runsc is the tests' one
# (scripts/gvisor-runsc.sh) unless AIRLOCK_RUNSC names another; RUNSC_PLATFORMS lists the
# platforms (default: "systrap ptrace").
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
exe=$target/release/airlock
runsc=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
runs=${1:-20}
loop="
import subprocess, time
ts = []
for _ in range($runs):
    t = time.perf_counter()
    subprocess.run(['/bin/true'], check=True)
    ts.append((time.perf_counter() - t) * 1000)
ts.sort()
print('median %.2f ms, p90 %.2f ms' % (ts[len(ts) // 2], ts[len(ts) * 9 // 10]))
"
echo "runsc: $("$runsc" --version | head -n 1)"
echo "host, fork+exec of /bin/true from python3: $(/usr/bin/python3 -c "$loop")"
for platform in ${RUNSC_PLATFORMS:-systrap ptrace}; do
  out=$("$exe" --gvisor-platform "$platform" run --backend gvisor --runsc "$runsc" \
    --workspace none --no-stdin -- /usr/bin/python3 -c "$loop" 2>&1 | tail -n 1)
  echo "gVisor ($platform), the same inside the box: $out"
done
