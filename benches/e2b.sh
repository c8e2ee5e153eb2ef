#!/usr/bin/env bash
# E2B SDK figures for `airlock serve` (issue 6): create + run("true") + kill, and a warm
# run_code("1+1"), through E2B's own Python SDK — each next to the native API in the same run.
# Usage: benches/e2b.sh [ITERATIONS] [WARM_RUNS]   (defaults 40 and 300)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
eval "$(scripts/e2b-clients.sh)"
export PYTHONDONTWRITEBYTECODE=1
"$E2B_PY_CURRENT" benches/e2b_sdk.py "$target/release/airlock" "${1:-40}" "${2:-300}"
