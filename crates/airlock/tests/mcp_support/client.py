"""Drives an MCP server with the official MCP Python SDK, for airlock's tests and benchmarks.

Usage: client.py STEPS_JSON (stdio|http) ...
  stdio COMMAND [ARG...]      spawn the server and talk over its stdin/stdout
  http URL API_KEY            streamable HTTP with `Authorization: Bearer API_KEY`

STEPS_JSON is a list of steps, run in order in one session:
  {"list": true}                                  -> {"tools": [names], "descriptions": {name: text}}
  {"call": NAME, "args": {...}}                   -> {"is_error": bool, "text": str, "images": [{"mime", "png"}]}
  {"bench": NAME, "args": {...}, "n": N}          -> {"ms": [per-call milliseconds]}
  {"wait": SECONDS}                               -> {}
  {"kill": MARKER}                                -> {"killed": [pids]}: SIGKILL to every `node` or
                                                     `python` process whose arguments contain MARKER
  {"elicit": [ANSWER...]}  (first step only)     -> {}: the client declares elicitation and
                                                     answers each elicitation/create in turn:
                                                     "accept", "decline", "cancel", or
                                                     {"action": ..., "wait": SECONDS}; past the
                                                     list, "decline"
  {"asked": true}                                 -> {"asked": [messages elicited so far]}
A protocol error becomes {"error": message}. Prints the list of results as JSON on stdout.
"""

import asyncio
import base64
import json
import os
import signal
import sys
import time

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def summarize(result):
    texts, images = [], []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            raw = base64.b64decode(block.data)
            images.append({"mime": block.mime_type, "png": raw[:8] == b"\x89PNG\r\n\x1a\n", "bytes": len(raw)})
    return {"is_error": bool(result.is_error), "text": "\n".join(texts), "images": images}


def kill_marked(marker):
    killed = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        prog = os.path.basename(argv[0]).decode(errors="replace")
        if (prog.startswith("node") or prog.startswith("python")) and any(marker.encode() in a for a in argv[1:]):
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))
    return killed


ASKED = []


def elicitation_callback(steps):
    """The callback answering elicitations from the first step's list, or None (the client
    then does not declare elicitation)."""
    if not steps or "elicit" not in steps[0]:
        return None
    answers = list(steps[0]["elicit"])

    async def on_elicit(context, params):
        ASKED.append(params.message)
        answer = answers.pop(0) if answers else "decline"
        if isinstance(answer, dict):
            await asyncio.sleep(answer.get("wait", 0))
            answer = answer["action"]
        return types.ElicitResult(action=answer, content={} if answer == "accept" else None)

    return on_elicit


async def run_steps(session, steps):
    await session.initialize()
    out = []
    for step in steps:
        try:
            if "elicit" in step:
                out.append({})
            elif "asked" in step:
                out.append({"asked": list(ASKED)})
            elif "list" in step:
                tools = (await session.list_tools()).tools
                out.append({"tools": [t.name for t in tools], "descriptions": {t.name: t.description or "" for t in tools}})
            elif "call" in step:
                out.append(summarize(await session.call_tool(step["call"], step.get("args", {}))))
            elif "bench" in step:
                ms = []
                for _ in range(step["n"]):
                    t0 = time.perf_counter()
                    r = await session.call_tool(step["bench"], step.get("args", {}))
                    ms.append((time.perf_counter() - t0) * 1000)
                    if r.is_error:
                        raise RuntimeError(f"benchmark call failed: {summarize(r)}")
                out.append({"ms": ms})
            elif "kill" in step:
                out.append({"killed": kill_marked(step["kill"])})
            elif "wait" in step:
                await asyncio.sleep(step["wait"])
                out.append({})
        except Exception as e:  # noqa: BLE001 - the test asserts on the message
            out.append({"error": f"{type(e).__name__}: {e}"})
    return out


async def main():
    steps = json.loads(sys.argv[1])
    mode = sys.argv[2]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], env=None)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicitation_callback(steps)) as session:
                results = await run_steps(session, steps)
    elif mode == "http":
        url, key = sys.argv[3], sys.argv[4]
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, elicitation_callback=elicitation_callback(steps)) as session:
                    results = await run_steps(session, steps)
    else:
        raise SystemExit(f"unknown transport {mode}")
    print(json.dumps(results))


asyncio.run(main())
