"""LangGraph (and LangChain tools) under a Tollgate run.

    from tollgate import Tollgate
    from tollgate.integrations.langgraph import chat_model, govern_tools
    run = Tollgate().open_run(agent="support", task="refund-7", scope="org:acme/support")
    graph = create_react_agent(chat_model(run, "gpt-4.1-mini"), govern_tools(tools, run))

:func:`govern_tools` wraps LangChain tools so each call is decided by the run's envelopes
before it runs: a denied call does not run and the model gets the reason (with the receipt)
as an error ``ToolMessage``; a call needing approval waits for a human; a redacted call runs
with the arguments policy returned; every result is recorded in the run. :func:`tool_node`
is LangGraph's ``ToolNode`` over them, for graphs built by hand. :func:`chat_model` is a
``ChatOpenAI`` whose calls go through the gateway's proxy in the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, SecretStr

from .._run import AsyncRun
from . import AnyRun, ToolNames, authorize, policy_name, record_result, safe_call_id

__all__ = ["GovernedTool", "chat_model", "govern_tools", "tool_node"]


def _split(input: Any) -> tuple[str | None, Any]:
    """(the tool call's id, its arguments) of what a ``ToolNode`` (a ``tool_call`` dict) or a
    direct caller (the arguments) passes to ``invoke``."""
    if isinstance(input, dict) and input.get("type") == "tool_call":
        return input.get("id"), input.get("args", {})
    return None, input


def _with_args(input: Any, arguments: dict[str, Any]) -> Any:
    if isinstance(input, dict) and input.get("type") == "tool_call":
        return {**input, "args": arguments}
    return arguments


def _output_text(output: Any) -> Any:
    return output.content if isinstance(output, ToolMessage) else output


class GovernedTool(BaseTool):
    """A LangChain tool whose every call is decided by a Tollgate run first."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseTool
    policy_name: str
    tollgate_run: Any
    approval_timeout: float = 300.0

    def _refusal(self, call_id: str | None, reason: str) -> Any:
        if call_id is None:
            return reason
        return ToolMessage(content=reason, tool_call_id=call_id, name=self.name, status="error")

    def _arguments(self, raw: Any) -> dict[str, Any] | None:
        if isinstance(raw, dict):
            return raw
        if isinstance(raw, str):
            # A single-input tool called with its text: policy sees it as {"input": text}.
            return {"input": raw}
        return None

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        call_id, raw = _split(input)
        arguments = self._arguments(raw)
        if arguments is None:
            return self._refusal(call_id, f"Tollgate: call not run, its arguments are not an object: {raw!r:.200}")
        run = self.tollgate_run
        if isinstance(run, AsyncRun):
            raise TypeError("a tool governed by an AsyncRun is called with ainvoke (use a Run for invoke)")
        auth = run.authorize(
            self.policy_name, arguments, call_id=safe_call_id(call_id), approval_timeout=self.approval_timeout
        )
        if not auth.allowed:
            return self._refusal(call_id, auth.reason)
        governed_input = _with_args(input, auth.arguments) if isinstance(raw, dict) else raw
        try:
            output = self.inner.invoke(governed_input, config, **kwargs)
        except Exception as e:
            run.record_result(auth.call_id, f"{type(e).__name__}: {e}", "error")
            raise
        run.record_result(auth.call_id, _output_text(output))
        return output

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        call_id, raw = _split(input)
        arguments = self._arguments(raw)
        if arguments is None:
            return self._refusal(call_id, f"Tollgate: call not run, its arguments are not an object: {raw!r:.200}")
        auth = await authorize(
            self.tollgate_run, self.policy_name, arguments, safe_call_id(call_id), self.approval_timeout
        )
        if not auth.allowed:
            return self._refusal(call_id, auth.reason)
        governed_input = _with_args(input, auth.arguments) if isinstance(raw, dict) else raw
        try:
            output = await self.inner.ainvoke(governed_input, config, **kwargs)
        except Exception as e:
            await record_result(self.tollgate_run, auth.call_id, f"{type(e).__name__}: {e}", "error")
            raise
        await record_result(self.tollgate_run, auth.call_id, _output_text(output))
        return output

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - invoke is overridden
        raise NotImplementedError("GovernedTool runs through invoke and ainvoke")


def govern_tools(
    tools: Sequence[Any],
    run: AnyRun,
    *,
    tool_names: ToolNames = None,
    prefix: str | None = None,
    approval_timeout: float = 300.0,
) -> list[GovernedTool]:
    """The tools (LangChain tools, or functions, which become tools) under ``run``.

    ``tool_names`` maps a tool's name to the name policy knows it by (or is a function);
    else ``prefix`` makes it ``PREFIX.NAME``; else the tool's own name is used.
    """
    from langchain_core.tools import tool as as_tool

    governed = []
    for t in tools:
        inner = t if isinstance(t, BaseTool) else as_tool(t)
        governed.append(
            GovernedTool(
                name=inner.name,
                description=inner.description,
                args_schema=inner.args_schema,
                return_direct=inner.return_direct,
                inner=inner,
                policy_name=policy_name(inner.name, tool_names, prefix),
                tollgate_run=run,
                approval_timeout=approval_timeout,
            )
        )
    return governed


def tool_node(tools: Sequence[Any], run: AnyRun, **kwargs: Any) -> Any:
    """LangGraph's ``ToolNode`` over :func:`govern_tools` (same keyword arguments)."""
    from langgraph.prebuilt import ToolNode

    return ToolNode(govern_tools(tools, run, **kwargs))


def chat_model(run: AnyRun, model: str, **kwargs: Any) -> Any:
    """A ``ChatOpenAI`` whose calls go through the gateway's OpenAI-compatible proxy in ``run``
    (Chat Completions; policy decides the model and redacts the messages)."""
    from langchain_openai import ChatOpenAI

    headers = dict(kwargs.pop("default_headers", None) or {})
    headers["X-Tollgate-Run"] = run.id
    return ChatOpenAI(
        model=model,
        base_url=run.client.url + "/v1",
        api_key=SecretStr(run.client.token),
        default_headers=headers,
        use_responses_api=False,
        **kwargs,
    )
