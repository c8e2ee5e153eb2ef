#!/usr/bin/env bash
# API figures for `airlock serve` (issue 4): create-to-first-exec, warm exec, memory per idle
# box, N idle boxes — each next to a plain fork+exec in the same run.
# Usage: benches/server.sh [IDLE_BOXES]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
python3 benches/server.py "$target/release/airlock" "${1:-200}"
