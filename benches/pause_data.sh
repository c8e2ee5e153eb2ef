#!/usr/bin/env bash
# Pause with memory of a box holding repeated vs random bytes (benches/pause_data.py), on gVisor
# and the microVM by default. Usage: benches/pause_data.sh [ROUNDS] [MIB] [BACKENDS]
#   (default 2, 256, "gvisor microvm"; as root). The runsc is the tests' one.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
export AIRLOCK_RUNSC
for backend in ${3:-gvisor microvm}; do
  [ "$backend" = microvm ] && scripts/microvm-guest.sh
  python3 benches/pause_data.py "$target/release/airlock" "$backend" "${1:-2}" "${2:-256}"
done
