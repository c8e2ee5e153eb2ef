#!/usr/bin/env bash
# Pause/resume figures (issue 19): resume to first output per backend next to a fresh create,
# pause of a 256 MiB box and snapshot sizes. Usage: benches/lifecycle.sh [ROUNDS] (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
"$target/release/airlock" template build --data-dir "$target/airlock-templates" templates/code-interpreter.toml >/dev/null
python3 benches/lifecycle.py "$target/release/airlock" "$target/airlock-templates/templates" "${1:-10}"
