#!/usr/bin/env bash
# microVM figures (issue 16): cold boot to the init, restore from the template snapshot to the
# first output, host memory per idle VM, and create → first exec through the API — each next to
# the native box in the same run. TCG on this machine (see `airlock receipt --backend microvm`).
# Usage: benches/microvm.sh [WARM_RUNS] [pause]   (default 20; `pause`: only the pause figures)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
scripts/microvm-guest.sh
cargo build --release --locked -q -p airlock --bin airlock --example microvm_bench
# The release airlock finds the guest beside it (target/release → target/microvm).
"$target/release/examples/microvm_bench" "$target/release/airlock" "${1:-20}" ${2:-}
