"""An MCP server that implements what the official MCP conformance suite's *server* scenarios
call (`@modelcontextprotocol/conformance` 0.1.13: `npx conformance server --url URL`), written
with the official Python SDK (`mcp` 2.x, `MCPServer`).

The suite's scenarios ask a dedicated test server for fixed names: tools such as
`test_simple_text`, `test_sampling` or `json_schema_2020_12_tool`, resources `test://static-text`,
`test://static-binary`, `test://watched-resource` and the template `test://template/{id}/data`,
prompts such as `test_prompt_with_arguments`, plus `logging/setLevel`, `completion/complete`,
`resources/subscribe` and `resources/unsubscribe`. This server provides all of them, so the
suite can be run against it directly or through Tollgate's MCP gateway in front of it.

    python conformance_server.py             # stdio
    python conformance_server.py http PORT   # streamable HTTP on http://127.0.0.1:PORT/mcp

Over HTTP it keeps sessions, stores SSE events in memory so a client can resume a stream with
`Last-Event-ID` (`test_reconnection` closes its own stream mid-call to make it do so), and
rejects requests whose Host or Origin is not localhost (DNS-rebinding protection).
"""

import asyncio
import base64
import io
import itertools
import json
import struct
import sys
import warnings
import wave
import zlib
from typing import Any

from mcp import types
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.mcpserver import Context, UserMessage
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning

# Logging, sampling and `resources/subscribe` are deprecated from protocol 2026-07-28 on, but the
# suite's scenarios (protocol 2025-11-25) exercise exactly them.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


def _png_1x1_red() -> bytes:
    """A valid 1x1 red PNG, built rather than pasted."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    """A valid WAV file: 10 ms of 8 kHz mono silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG).decode()
WAV_B64 = base64.b64encode(_wav_silence()).decode()


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")


def _embedded_text(uri: str, text: str, mime_type: str = "text/plain") -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.EmbeddedResource(type="resource", resource=contents)


# ---------------------------------------------------------------------------------------------
# Streamable HTTP resumability: the SDK ships only the `EventStore` interface.


class MemoryEventStore(EventStore):
    """Every SSE event the server sends, in order, so a stream can be replayed after an event id."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        # (event id, stream id, message); a priming event has no message
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        ids = [event_id for event_id, _, _ in self._events]
        if last_event_id not in ids:
            return None
        position = ids.index(last_event_id)
        stream_id = self._events[position][1]
        for event_id, stream, message in self._events[position + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# ---------------------------------------------------------------------------------------------
# Per-session state kept by this server: the logging level and the resources subscribed to.
# Over HTTP a session is named by its `Mcp-Session-Id` header; stdio has one session (None).

LOG_LEVELS: list[types.LoggingLevel] = [
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
log_level: dict[str | None, types.LoggingLevel] = {}
subscriptions: dict[str | None, set[str]] = {}


def _session_key(request_context: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(request_context.request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


async def _log(ctx: Context, level: types.LoggingLevel, message: str) -> None:
    """Send a log notification unless the session asked for a higher level only."""
    threshold = log_level.get(_session_key(ctx.request_context), "debug")
    if LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold):
        await ctx.log(level, message, logger_name="conformance")


# ---------------------------------------------------------------------------------------------
# A tool whose input schema the SDK must pass through untouched (JSON Schema 2020-12, SEP-1613).


def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return f"name={name!r} address={json.dumps(address)}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

schema_tool = Tool.from_function(json_schema_2020_12_tool)
server = MCPServer(
    "tollgate-conformance-server",
    version="1.0.0",
    tools=[schema_tool.model_copy(update={"parameters": JSON_SCHEMA_2020_12})],
)


# ---------------------------------------------------------------------------------------------
# Tools


@server.tool()
def test_simple_text() -> str:
    """Returns one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[types.ContentBlock]:
    """Returns a 1x1 red PNG image."""
    return [_image()]


@server.tool()
def test_audio_content() -> list[types.ContentBlock]:
    """Returns a short WAV clip."""
    return [types.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[types.ContentBlock]:
    """Returns an embedded text resource."""
    return [_embedded_text("test://embedded-resource", "This is an embedded resource content.")]


@server.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Returns text, an image and an embedded resource together."""
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        _image(),
        _embedded_text(
            "test://mixed-content-resource",
            json.dumps({"test": "data", "value": 123}),
            "application/json",
        ),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log notifications, 50 ms apart, while it runs."""
    await _log(ctx, "info", "Tool execution started")
    await asyncio.sleep(0.05)
    await _log(ctx, "info", "Tool processing data")
    await asyncio.sleep(0.05)
    await _log(ctx, "info", "Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, 50 ms apart (if the caller sent a progress token)."""
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(step, 100, f"step {step // 50 + 1} of 3")
    return "Progress tool completed"


@server.tool()
def test_error_handling() -> str:
    """Always fails: its result has isError set."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model (sampling/createMessage) and returns its answer."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = result.content
    if isinstance(content, types.TextContent):
        return f"LLM response: {content.text}"
    return f"LLM response: {json.dumps(content.model_dump(mode='json'))}"


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user (elicitation/create) for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return f"User response: {await _elicit(ctx, message, schema)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields of every primitive type carry a default (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    result = await _elicit(ctx, "Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: {result}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with each of the five enum shapes of SEP-1330."""
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Untitled single-select",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Titled single-select",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Legacy titled enum (enumNames, deprecated)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Untitled multi-select",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Titled multi-select",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        "required": [],
    }
    result = await _elicit(ctx, "Please pick from each kind of enum", schema)
    return f"Elicitation completed: {result}"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its own SSE stream mid-call, then answers: the client must resume the stream with
    Last-Event-ID to get the result (SEP-1699; a no-op close below protocol 2025-11-25)."""
    await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return "Reconnection test completed successfully"


# ---------------------------------------------------------------------------------------------
# Resources


@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 PNG)."""
    return PNG


@server.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for one id, from a resource template."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# ---------------------------------------------------------------------------------------------
# Prompts


@server.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments."""
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt with two required arguments."""
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:  # noqa: N803
    """A prompt that embeds the resource it is given."""
    return [
        UserMessage(_embedded_text(resourceUri, "Embedded resource content for testing.")),
        UserMessage("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt carrying an image."""
    return [UserMessage(_image()), UserMessage("Please analyze the image above.")]


# ---------------------------------------------------------------------------------------------
# Completion, logging level and resource subscriptions


COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test", "testValue1"],
    "arg2": ["world", "wonder", "testValue2"],
}


@server.completion()
async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
    if getattr(ref, "name", None) != "test_prompt_with_arguments":
        return types.Completion(values=[], total=0, has_more=False)
    candidates = COMPLETIONS.get(argument.name, [])
    values = [value for value in candidates if value.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


async def set_logging_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    log_level[_session_key(ctx)] = params.level
    return types.EmptyResult()


async def subscribe(
    ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
) -> types.EmptyResult:
    subscriptions.setdefault(_session_key(ctx), set()).add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
) -> types.EmptyResult:
    subscriptions.get(_session_key(ctx), set()).discard(str(params.uri))
    return types.EmptyResult()


# MCPServer has no decorators for these three; registering them also advertises the `logging`
# capability and `resources.subscribe`.
lowlevel = server._lowlevel_server
lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_logging_level)
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            streamable_http_path="/mcp",
            event_store=MemoryEventStore(),
            retry_interval=500,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            ),
        )
    elif len(sys.argv) == 1:
        server.run("stdio")
    else:
        sys.exit("usage: conformance_server.py [http PORT]")
