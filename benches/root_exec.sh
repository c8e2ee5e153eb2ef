#!/usr/bin/env bash
# What a root command costs (issue 18): `exec id -u` as the box user and as root, interleaved in
# one box per backend, through the REST API. Usage: benches/root_exec.sh [ROUNDS] [BACKENDS]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)} \
  python3 benches/root_exec.py "$target/release/airlock" "${1:-50}" "${2:-native,gvisor,microvm}"
