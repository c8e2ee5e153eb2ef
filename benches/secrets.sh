#!/usr/bin/env bash
# Secrets interception benchmark (issue 20), as ratios against a plain CONNECT tunnel to the
# same loopback HTTPS origin, in the same run (crates/airlock-proxy/examples/secrets_bench.rs):
#  (a) added latency of a request on an open connection, and of a new connection + request
#      (goal: an intercepted request adds <= 1 ms)
#  (b) throughput of one large GET through each kind, interleaved rounds (goal >= 0.8x)
# Usage: benches/secrets.sh [REQUESTS] [BYTES] [ROUNDS]   (defaults 500, 256 MiB, 9)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p airlock-proxy --example secrets_bench
bench=$target/release/examples/secrets_bench
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" latency "${1:-500}"
"$bench" throughput "${2:-$((256 << 20))}" "${3:-9}"
