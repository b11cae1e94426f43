"""An MCP client for Tollgate's MCP gateway tests, written with the official Python SDK (`mcp`
2.x, `Client` over streamable HTTP): it connects to `/v1/mcp` with a bearer token, runs the
steps it reads as JSON on stdin, and prints what it saw as one JSON document on stdout.

    python client.py URL TOKEN [RUN] < steps.json

Steps: `{"op": "list"}` (the tool names), `{"op": "call", "tool": ..., "arguments": {...},
"meta": {...}}` (the result: `isError`, the text of its content, its `_meta`). A step that
raises gives `{"error": "..."}` and the client goes on.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token = sys.argv[1], sys.argv[2]
    headers = {"Authorization": f"Bearer {token}"}
    if len(sys.argv) > 3:
        headers["x-tollgate-run"] = sys.argv[3]
    steps = json.load(sys.stdin)
    seen = []
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(url, http_client=http)
        # An initialize handshake: Tollgate binds a session to a run at `initialize`.
        async with Client(transport, mode="legacy", cache=None) as client:
            seen.append({"instructions": client.instructions, "protocol": client.protocol_version})
            for step in steps:
                try:
                    seen.append(await run(client, step))
                except Exception as e:  # noqa: BLE001 - the test reads what failed
                    seen.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(seen))


async def run(client: Client, step: dict) -> dict:
    if step["op"] == "list":
        listed = await client.list_tools()
        return {"tools": sorted(t.name for t in listed.tools)}
    if step["op"] == "call":
        result = await client.call_tool(step["tool"], step.get("arguments") or {}, meta=step.get("meta"))
        return {
            "isError": bool(result.is_error),
            "text": "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None),
            "meta": result.meta or {},
        }
    raise ValueError(f"unknown step {step['op']}")


anyio.run(main)
