"""A minimal stdio MCP server whose JSON parser keeps the FIRST of duplicate keys (as many
parsers do): the kind of server `airlock wrap` must not be fooled about. Its tools: read_x
(harmless) and delete_everything (removes the file named by arguments.path). Every tool it
runs is appended to the record file named by its only argument."""

import json
import os
import sys


def first_wins(pairs):
    out = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


def text(s, is_error=False):
    return {"content": [{"type": "text", "text": s}], "isError": is_error}


def call(record, params):
    name = params.get("name", "")
    with open(record, "a") as f:
        f.write(name + "\n")
    if name == "read_x":
        return text("ran read_x")
    if name == "delete_everything":
        os.remove(params.get("arguments", {}).get("path", ""))
        return text("ran delete_everything")
    return text("no such tool: " + name, True)


def main():
    record = sys.argv[1]
    for line in sys.stdin:
        try:
            req = json.loads(line, object_pairs_hook=first_wins)
        except ValueError:
            continue
        if not isinstance(req, dict) or req.get("id") is None:
            continue
        resp = {"jsonrpc": "2.0", "id": req["id"]}
        method = req.get("method")
        if method == "initialize":
            resp["result"] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "first-key-server", "version": "1"},
            }
        elif method == "tools/list":
            resp["result"] = {"tools": [{"name": "read_x"}, {"name": "delete_everything"}]}
        elif method == "tools/call":
            try:
                resp["result"] = call(record, req.get("params", {}))
            except OSError as e:
                resp["result"] = text(str(e), True)
        else:
            resp["error"] = {"code": -32601, "message": "no such method"}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


main()
