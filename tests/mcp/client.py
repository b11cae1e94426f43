"""An MCP client for Tollgate's MCP gateway tests, written with the official Python SDK (`mcp`
2.x, `Client` over streamable HTTP): it connects to `/v1/mcp` with a bearer token, runs the
steps it reads as JSON on stdin, and prints what it saw as one JSON document on stdout.

    python client.py URL TOKEN [RUN] < steps.json

Steps: `{"op": "list"}` (the tool names), `{"op": "call", "tool": ..., "arguments": {...},
"meta": {...}, "progress": true}` (the result: `isError`, the text of its content, its `_meta`,
and the progress messages heard when asked), `{"op": "resources"}` and `{"op": "templates"}`
(the URIs), `{"op": "read", "uri": ...}` (the texts, `_meta`), `{"op": "prompts"}` (the names),
`{"op": "prompt", "name": ..., "arguments": {...}}` (the messages' texts). A step that raises
gives `{"error": "..."}` and the client goes on.

The client answers sampling with the text `forty-two` and elicitation by accepting `{"ok":
true}`, and counts how often it was asked (`asked` in the last entry).
"""

import json
import sys

import anyio
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

ASKED = {"sampling": 0, "elicitation": 0}


async def sampling(context, params):
    ASKED["sampling"] += 1
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="forty-two"), model="test-model"
    )


async def elicitation(context, params):
    ASKED["elicitation"] += 1
    return types.ElicitResult(action="accept", content={"ok": True})


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
        async with Client(
            transport,
            mode="legacy",
            cache=None,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
        ) as client:
            seen.append({"instructions": client.instructions, "protocol": client.protocol_version})
            for step in steps:
                try:
                    seen.append(await run(client, step))
                except Exception as e:  # noqa: BLE001 - the test reads what failed
                    seen.append({"error": f"{type(e).__name__}: {e}"})
    seen.append({"asked": ASKED})
    print(json.dumps(seen))


async def run(client: Client, step: dict) -> dict:
    if step["op"] == "list":
        listed = await client.list_tools()
        return {"tools": sorted(t.name for t in listed.tools)}
    if step["op"] == "call":
        heard = []

        async def progress(done, total, message):
            heard.append(message)

        result = await client.call_tool(
            step["tool"],
            step.get("arguments") or {},
            meta=step.get("meta"),
            progress_callback=progress if step.get("progress") else None,
        )
        return {
            "isError": bool(result.is_error),
            "text": "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None),
            "meta": result.meta or {},
            "progress": heard,
        }
    if step["op"] == "resources":
        listed = await client.list_resources(cache_mode="bypass")
        return {"uris": sorted(str(r.uri) for r in listed.resources)}
    if step["op"] == "templates":
        listed = await client.list_resource_templates(cache_mode="bypass")
        return {"templates": sorted(t.uri_template for t in listed.resource_templates)}
    if step["op"] == "read":
        read = await client.read_resource(step["uri"], cache_mode="bypass")
        return {
            "texts": [getattr(c, "text", None) for c in read.contents],
            "meta": read.meta or {},
        }
    if step["op"] == "prompts":
        listed = await client.list_prompts()
        return {"prompts": sorted(p.name for p in listed.prompts)}
    if step["op"] == "prompt":
        got = await client.get_prompt(step["name"], step.get("arguments"))
        return {"texts": [getattr(m.content, "text", None) for m in got.messages]}
    raise ValueError(f"unknown step {step['op']}")


anyio.run(main)
