#!/usr/bin/env bash
# Warm pools (issue 22): API create -> first exec output with and without a pool, same run,
# next to a plain fork+exec.
# Usage: benches/pool.sh [ROUNDS]   (default 40)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
python3 benches/pool.py "$target/release/airlock" "${1:-40}"
