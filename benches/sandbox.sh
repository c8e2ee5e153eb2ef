#!/usr/bin/env bash
# Long-lived sandbox figures (issue 4): create-to-first-exec and a warm exec through the agent,
# each next to a plain fork+exec in the same run; host-side memory per idle box; N idle boxes.
# Usage: benches/sandbox.sh [IDLE_BOXES]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
cargo build --release --locked -q -p airlock-native --example sandbox_bench
"$target/release/examples/sandbox_bench" "$target/release/airlock" "${1:-200}"
