#!/usr/bin/env bash
# Approvals benchmark (issue 21), as same-run comparisons on 127.0.0.1 (names from a fixed
# table, never DNS), new connection per request, requests alternated between the kinds:
#  - an allowed request under --approval on-request vs --approval never   (goal ratio 1.00)
#  - a held request answered at once by an in-process approver, over an allowed one
#                                                                           (goal <= 1 ms added)
#  - a held request answered by a real approver program (python, one JSON line each way)
# Uses crates/airlock-proxy/examples/proxy_bench.rs. Usage: benches/approvals.sh [N] (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p airlock-proxy --example proxy_bench
bench=$PWD/$target/release/examples/proxy_bench
case $target in /*) bench=$target/release/examples/proxy_bench ;; esac
timeout 600 "$bench" approvals "$n"
