#!/usr/bin/env bash
# MCP figures (issue 7): `airlock wrap` overhead against the same server called directly, and
# warm `run_code("1+1")` through `airlock mcp` over stdio, in one run. Needs the MCP test tools
# (scripts/test.sh installs them under target/mcp-tools, or set AIRLOCK_MCP_TOOLS).
# Usage: benches/mcp.sh [N]   (N calls per median, default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
tools=${AIRLOCK_MCP_TOOLS:-$PWD/target/mcp-tools}
[ -x "$tools/venv/bin/python" ] || { echo "benches/mcp.sh: no MCP tools in $tools; run scripts/test.sh first" >&2; exit 1; }
cargo build --release --locked -q -p airlock
/usr/bin/python3 benches/mcp.py "$target/release/airlock" "$(cd "$tools" && pwd -P)" "${1:-300}"
