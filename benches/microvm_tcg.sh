#!/usr/bin/env bash
# What TCG's empty translation cache costs a restored microVM box: the first commands after a
# create and after a resume against the later ones, in the same box (benches/microvm_tcg.py).
# Usage: benches/microvm_tcg.sh [ROUNDS] [COMMANDS]   (default 5, 4; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
scripts/microvm-guest.sh
cargo build --release --locked -q -p airlock
python3 benches/microvm_tcg.py "$target/release/airlock" "${1:-5}" "${2:-4}"
