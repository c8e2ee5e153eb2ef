#!/usr/bin/env bash
# The benchmark report (issue 22): every peer side by side in one run, written as one
# self-contained HTML page with its charts plus the raw numbers as JSON, under
# target/bench-report/ (report.html, results.json). See benches/report.py for the sections.
# The runsc and the microVM guest are the ones the tests use (scripts/gvisor-runsc.sh,
# scripts/microvm-guest.sh); the API section runs with E2B's SDK (scripts/e2b-clients.sh).
# Usage: benches/report.sh [RUNS] [BOXES]   (default 100 starts per series, 500 idle boxes; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p airlock -p airlock-agent
cargo build --release --locked -q -p airlock-proxy --example proxy_bench
scripts/microvm-guest.sh >/dev/null
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
export AIRLOCK_RUNSC
eval "$(scripts/e2b-clients.sh)"
out=$target/bench-report
python3 benches/report.py collect --airlock "$target/release/airlock" --out "$out" \
  --runs "${1:-100}" --boxes "${2:-500}" --pool-python "$E2B_PY_CURRENT" \
  --proxy-bench "$target/release/examples/proxy_bench"
