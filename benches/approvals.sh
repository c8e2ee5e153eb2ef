#!/usr/bin/env bash
# Approvals benchmark (issue 21), as same-run comparisons on 127.0.0.1 (names from a fixed
# table, never DNS), new connection per request, requests alternated between the kinds:
#  - an allowed request under --approval on-request vs --approval never   (goal ratio 1.00)
#  - a held request answered at once by an in-process approver, over an allowed one
#                                                                           (goal <= 1 ms added)
#  - a held request answered by a real approver program (python, one JSON line each way)
#  - over the server's API (benches/approvals_api.py, a real `airlock serve` and box): a held
#    request answered with POST /v1/sandboxes/{id}/approvals/{n}, from the POST to the request
#    at the origin, against the POST's own latency                          (goal <= 1 ms added)
# Uses crates/airlock-proxy/examples/proxy_bench.rs. Usage: benches/approvals.sh [N] (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p airlock-proxy --example proxy_bench
bench=$PWD/$target/release/examples/proxy_bench
case $target in /*) bench=$target/release/examples/proxy_bench ;; esac
timeout 600 "$bench" approvals "$n"
cargo build --release --locked -q -p airlock
exe=$PWD/$target/release/airlock
case $target in /*) exe=$target/release/airlock ;; esac
# Each held request is a curl in the box and a poll + POST here: a tenth of N is plenty.
timeout 600 python3 benches/approvals_api.py "$exe" $(( n / 10 > 50 ? n / 10 : 50 ))
