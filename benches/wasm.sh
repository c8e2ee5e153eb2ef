#!/usr/bin/env bash
# WASM box figures (issue 17), each against a peer in the same run:
#  1. start: `airlock run --backend wasm -- python3 -c pass` (CPython for WASI, precompiled)
#     against the host's own `python3 -c pass` and against the same in a native box; and the
#     runner alone (`airlock wasm-run`, no box) with the standard library unpacked (what boxes
#     use) in each memory layout (reserved: guard pages, what a box with a memory cgroup uses;
#     bounded: bounds checks, under RLIMIT_AS), and on the zip inside the module (hyperfine);
#  2. where a runner's start goes: its phases, timed by the runner (AIRLOCK_WASM_PHASES);
#  3. warm `1+1` through the API and host memory per idle session (benches/wasm.py).
# Needs CPython for WASI in target/airlock-wasm (scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock
exe="$target/release/airlock"
export AIRLOCK_WASM_DIR=${AIRLOCK_WASM_DIR:-$target/airlock-wasm}
# Compile CPython for WASI and unpack its standard library into the cache first (once), so the
# runs measure a start only.
"$exe" run --backend wasm --workspace none --no-stdin -- python3 -c pass
wasm_module=$(ls "$AIRLOCK_WASM_DIR"/python/*/python-*.wasm)
digest=$(sha256sum "$wasm_module" | cut -d' ' -f1)
module=$("$exe" wasm-compile "$wasm_module" "$digest" "$AIRLOCK_WASM_DIR/cache" reserved)
bounded=$("$exe" wasm-compile "$wasm_module" "$digest" "$AIRLOCK_WASM_DIR/cache" bounded)
home=$(ls -d "$AIRLOCK_WASM_DIR"/cache/*-home | head -n 1)
hyperfine -N --warmup 10 --runs "$runs" \
  "$exe run --backend wasm --workspace none --no-stdin -- python3 -c pass" \
  "/usr/bin/python3 -c pass" \
  "$exe run --workspace none --no-stdin -- /usr/bin/python3 -c pass" \
  "$exe wasm-run --module $module --memory-style reserved --dir ro:$home --env PYTHONHOME=$home -- python3 -c pass" \
  "$exe wasm-run --module $bounded --memory-style bounded --dir ro:$home --env PYTHONHOME=$home -- python3 -c pass" \
  "$exe wasm-run --module $module --memory-style reserved -- python3 -c pass"
for i in 1 2 3; do
  AIRLOCK_WASM_PHASES=1 "$exe" wasm-run --module "$module" --memory-style reserved --dir "ro:$home" \
    --env "PYTHONHOME=$home" -- python3 -c pass 2>&1 | tr '\n' ' '
  echo
done
/usr/bin/python3 benches/wasm.py "$exe"
