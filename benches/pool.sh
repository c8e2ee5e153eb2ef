#!/usr/bin/env bash
# Warm pools (issue 22): create -> first output with and without a pool (native, gVisor,
# microVM, E2B's SDK), two servers in the same run, next to a plain fork+exec.
# Usage: benches/pool.sh [ROUNDS]   (default 40)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
eval "$(scripts/e2b-clients.sh)"
export PYTHONDONTWRITEBYTECODE=1
"$E2B_PY_CURRENT" benches/pool.py "$target/release/airlock" "${1:-40}"
