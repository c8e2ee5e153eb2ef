#!/usr/bin/env bash
# Code-interpreter figures (issue 5) against a warm IPython kernel in the same run.
# Makes a virtualenv with jupyter_client and ipykernel from PyPI (under target/) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
venv="$target/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q ipykernel jupyter_client
fi
"$venv/bin/python" benches/interpreter.py "$target/release/airlock"
