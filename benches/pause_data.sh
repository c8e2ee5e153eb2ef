#!/usr/bin/env bash
# Pause with memory of a box holding repeated vs random bytes (benches/pause_data.py), on gVisor
# by default. Usage: benches/pause_data.sh [ROUNDS] [MIB] [BACKENDS]
#   (default 2, 256, gvisor; as root). The runsc is the tests' one. A microVM box on the host
#   template cannot be checkpointed while a process holds a file of its shared /usr (it says so):
#   benches/lifecycle.py measures the microVM on the code-interpreter template.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
export AIRLOCK_RUNSC
for backend in ${3:-gvisor}; do
  [ "$backend" = microvm ] && scripts/microvm-guest.sh
  python3 benches/pause_data.py "$target/release/airlock" "$backend" "${1:-2}" "${2:-256}"
done
