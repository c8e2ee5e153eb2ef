#!/usr/bin/env bash
# gVisor backend figures (issue 15), each next to its peer in the same run: a box started to the
# agent's hello, a command run and the box ended, against `runsc do /bin/true` (same runsc, same
# platform); `airlock run --backend gvisor -- /bin/true` against it; warm exec through the API;
# Python's start under gVisor against a native box; pause (runsc checkpoint) and resume to the
# first output. The runsc is the one the tests use (scripts/gvisor-runsc.sh), unless
# AIRLOCK_RUNSC names another.
# Usage: benches/gvisor.sh [RUNS]   (default 30; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock -p airlock-agent
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
export AIRLOCK_RUNSC
python3 benches/gvisor.py "$target/release/airlock" "${1:-30}"
