"""MCP figures (issue 7), each against its peer in the same run, with the official MCP Python SDK
as the client (crates/airlock/tests/mcp_support/client.py's "bench" step):

1. tool-call overhead of `airlock wrap`: the reference filesystem server called directly vs the
   same server under `airlock wrap` (box + relay), `list_allowed_directories`, median of N;
2. `run_code("1+1")` through `airlock mcp` over stdio, warm (the box and context exist), median of
   N; its peer is `sandbox_info` on the same server (the MCP round trip without the box).

Usage: mcp.py AIRLOCK TOOLS_DIR N
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

airlock, tools, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = os.path.join(os.path.dirname(__file__), "..", "crates", "airlock", "tests", "mcp_support", "client.py")
python = os.path.join(tools, "venv", "bin", "python")
npm = os.path.join(tools, "npm")
server = os.path.join(npm, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")


def bench(steps, target, cwd):
    out = subprocess.run([python, client, json.dumps(steps), *target], cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"client failed: {out.stderr}")
    return json.loads(out.stdout)


def median_of(result):
    if "ms" not in result:
        sys.exit(f"benchmark step failed: {result}")
    return statistics.median(result["ms"])


with tempfile.TemporaryDirectory(prefix="airlock-bench-mcp-") as ws:
    warm = {"bench": "list_allowed_directories", "args": {}, "n": 20}
    steps = [warm, {"bench": "list_allowed_directories", "args": {}, "n": n}]
    direct = median_of(bench(steps, ["stdio", "node", server, ws], ws)[1])
    wrapped = median_of(bench(steps, ["stdio", airlock, "wrap", "--read", npm, "--", "node", server, ws], ws)[1])
    print(f"wrap: direct {direct:.3f} ms, wrapped {wrapped:.3f} ms, overhead {wrapped - direct:.3f} ms (goal <= 1 ms)")

    code = {"code": "1+1"}
    steps = [
        {"bench": "run_code", "args": code, "n": 20},
        {"bench": "run_code", "args": code, "n": n},
        {"bench": "sandbox_info", "args": {}, "n": n},
    ]
    r = bench(steps, ["stdio", airlock, "mcp"], ws)
    run_code, info = median_of(r[1]), median_of(r[2])
    print(f"mcp: run_code('1+1') warm {run_code:.3f} ms (goal <= 3 ms); sandbox_info on the same server {info:.3f} ms")
