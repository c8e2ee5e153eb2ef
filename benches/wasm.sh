#!/usr/bin/env bash
# WASM box figures (issue 17), each against a peer in the same run:
#  1. start: `airlock run --backend wasm -- python3 -c pass` (CPython for WASI, precompiled)
#     against the host's own `python3 -c pass` and against the same in a native box (hyperfine);
#  2. warm `1+1` through the API and host memory per idle session (benches/wasm.py).
# Needs CPython for WASI in target/airlock-wasm (scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
exe="$target/release/airlock"
# Compile CPython for WASI into the cache first (once), so the runs measure a start only.
"$exe" run --backend wasm --workspace none --no-stdin -- python3 -c pass
hyperfine -N --warmup 10 --runs "$runs" \
  "$exe run --backend wasm --workspace none --no-stdin -- python3 -c pass" \
  "/usr/bin/python3 -c pass" \
  "$exe run --workspace none --no-stdin -- /usr/bin/python3 -c pass"
/usr/bin/python3 benches/wasm.py "$exe"
