#!/usr/bin/env bash
# gVisor backend figures (issue 15), each next to its peer in the same run: a box started to the
# agent's hello, a command run and the box ended, against `runsc do /bin/true` (same runsc, same
# platform); warm exec through the API; Python's start under gVisor against a native box.
# Usage: benches/gvisor.sh [RUNS]   (default 30; as root, with runsc installed)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock -p airlock-agent
python3 benches/gvisor.py "$target/release/airlock" "${1:-30}"
