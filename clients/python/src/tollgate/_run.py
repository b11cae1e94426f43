"""A run as a handle: everything an agent does inside one run, bound to its id."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import errors
from . import models as m

if TYPE_CHECKING:
    from ._client import AsyncTollgate, Tollgate


@dataclass
class Authorization:
    """What policy (and, when it asked for one, a human) said about one tool call.

    ``allowed``: run it now, with ``arguments`` (secrets replaced when policy redacted them).
    Otherwise ``reason`` is the sentence to give the model instead of the tool's result.
    """

    answer: m.ToolCallAnswer
    approval: m.Approval | None = None
    timed_out: bool = False

    @property
    def allowed(self) -> bool:
        return self.answer.execute

    @property
    def effect(self) -> m.Effect:
        return self.answer.effect

    @property
    def arguments(self) -> dict[str, Any]:
        return self.answer.arguments or {}

    @property
    def call_id(self) -> str:
        return self.answer.call_id

    @property
    def receipt(self) -> str:
        """``run#seq`` of the deciding event."""
        return str(self.answer.receipt)

    @property
    def reason(self) -> str:
        a = self.approval
        if self.timed_out and a is not None:
            return f"Tollgate: call not run, approval {a.id} was not decided in time (receipt {self.receipt})"
        if a is not None and a.state in ("rejected", "expired"):
            who = f" by {a.decided_by}" if a.decided_by else ""
            why = f": {a.reason}" if a.reason else ""
            return f"Tollgate: call not run, approval {a.id} {a.state}{who}{why} (receipt {self.receipt})"
        if self.allowed:
            return self.answer.reason
        return f"Tollgate: call not run, {self.answer.effect}: {self.answer.reason} (receipt {self.receipt})"


def _approved_id(call_id: str) -> str | None:
    """The id of the call made again with its approval: the first call's, marked."""
    return f"{call_id}.approved" if len(call_id) <= 119 else None


def _result_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, default=str)
    except (TypeError, ValueError):
        return repr(output)


def _result_event(call_id: str, output: Any, status: str) -> m.EventInput:
    return m.EventInput(
        kind="tool_result",
        payload={"call_id": call_id, "status": status, "output": _result_text(output)},
    )


class _RunBase:
    view: m.RunView

    @property
    def id(self) -> str:
        return self.view.run.id

    @property
    def governing(self) -> list[str]:
        """``ID@VERSION`` of the envelopes governing the run."""
        return self.view.governing

    def _openai_settings(self, url: str, token: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        headers = dict(kwargs.pop("default_headers", None) or {})
        headers["X-Tollgate-Run"] = self.id
        return {"base_url": url + "/v1", "api_key": token, "default_headers": headers, **kwargs}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.view.run.status}>"


class Run(_RunBase):
    """A run, for a blocking agent. As a context manager, it finishes the run on exit:
    ``succeeded``, or ``failed`` when the block raised."""

    def __init__(self, client: Tollgate, view: m.RunView) -> None:
        self.client = client
        self.view = view

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            self.finish("failed" if exc is not None else "succeeded")
        except errors.Conflict:
            pass  # finished already

    def refresh(self) -> m.RunView:
        self.view = self.client.get_run(self.id)
        return self.view

    def step(self, name: str, agent: str | None = None) -> int:
        return self.client.add_step(self.id, name, agent)

    def events(self, events: list[m.EventInput]) -> list[m.Appended]:
        return self.client.append_events(self.id, events)

    def note(self, text: str, **payload: Any) -> m.Appended:
        return self.events([m.EventInput(kind="note", payload={"text": text, **payload})])[0]

    def output(self, text: str, **payload: Any) -> m.Appended:
        return self.events([m.EventInput(kind="output", payload={"text": text, **payload})])[0]

    def compile(self, items: list[m.CandidateItem], **settings: Any) -> m.CompileAnswer:
        return self.client.compile(self.id, items, **settings)

    def tool_call(self, tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> m.ToolCallAnswer:
        return self.client.tool_call(self.id, tool, arguments, **kw)

    def authorize(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        approval_timeout: float = 300.0,
    ) -> Authorization:
        """Asks before a tool call; when policy wants a human, waits up to
        ``approval_timeout`` seconds for the decision and asks again with the approval."""
        answer = self.tool_call(tool, arguments or {}, call_id=call_id)
        if answer.effect != "require_approval" or answer.approval is None:
            return Authorization(answer)
        try:
            approval = self.client.wait_for_approval(answer.approval.id, approval_timeout)
        except errors.ApprovalTimeout:
            return Authorization(answer, self.client.get_approval(answer.approval.id), timed_out=True)
        if approval.state != "approved":
            return Authorization(answer, approval)
        again = self.tool_call(tool, arguments or {}, approval_id=approval.id, call_id=_approved_id(answer.call_id))
        return Authorization(again, approval)

    def record_result(self, call_id: str, output: Any, status: str = "ok") -> m.Appended:
        """Records what a tool returned (``status`` ``ok`` or ``error``)."""
        return self.events([_result_event(call_id, output, status)])[0]

    def call(self, tool: str, fn: Callable[..., Any], arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
        """Authorizes ``tool``, runs ``fn(**arguments)`` when allowed (with the arguments policy
        returned), records its result and returns it; raises ``ToolDenied`` otherwise."""
        auth = self.authorize(tool, arguments, **kw)
        if not auth.allowed:
            raise errors.ToolDenied(auth.reason, code=auth.effect, receipt=auth.receipt)
        try:
            output = fn(**auth.arguments)
        except Exception as e:
            self.record_result(auth.call_id, f"{type(e).__name__}: {e}", status="error")
            raise
        self.record_result(auth.call_id, output)
        return output

    def decisions(self, **filters: Any) -> list[m.RecordedDecision]:
        return self.client.decisions(self.id, **filters)

    def post_contract(self, contract: m.HandoffContract) -> m.Posted:
        """Posts a handoff contract from this run (the handoff pack judges it)."""
        return self.client.create_contract(contract)

    def finish(self, status: m.FinalStatus = "succeeded") -> m.RunView:
        self.view = self.client.finish_run(self.id, status)
        return self.view

    def openai(self, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` client whose calls go through the gateway in this run."""
        from openai import OpenAI

        return OpenAI(**self._openai_settings(self.client.url, self.client.token, kwargs))

    def async_openai(self, **kwargs: Any) -> Any:
        """An ``openai.AsyncOpenAI`` client whose calls go through the gateway in this run."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(**self._openai_settings(self.client.url, self.client.token, kwargs))


class AsyncRun(_RunBase):
    """A run, for an asyncio agent: :class:`Run`'s methods, awaited."""

    def __init__(self, client: AsyncTollgate, view: m.RunView) -> None:
        self.client = client
        self.view = view

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            await self.finish("failed" if exc is not None else "succeeded")
        except errors.Conflict:
            pass

    async def refresh(self) -> m.RunView:
        self.view = await self.client.get_run(self.id)
        return self.view

    async def step(self, name: str, agent: str | None = None) -> int:
        return await self.client.add_step(self.id, name, agent)

    async def events(self, events: list[m.EventInput]) -> list[m.Appended]:
        return await self.client.append_events(self.id, events)

    async def note(self, text: str, **payload: Any) -> m.Appended:
        return (await self.events([m.EventInput(kind="note", payload={"text": text, **payload})]))[0]

    async def output(self, text: str, **payload: Any) -> m.Appended:
        return (await self.events([m.EventInput(kind="output", payload={"text": text, **payload})]))[0]

    async def compile(self, items: list[m.CandidateItem], **settings: Any) -> m.CompileAnswer:
        return await self.client.compile(self.id, items, **settings)

    async def tool_call(self, tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> m.ToolCallAnswer:
        return await self.client.tool_call(self.id, tool, arguments, **kw)

    async def authorize(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        approval_timeout: float = 300.0,
    ) -> Authorization:
        answer = await self.tool_call(tool, arguments or {}, call_id=call_id)
        if answer.effect != "require_approval" or answer.approval is None:
            return Authorization(answer)
        try:
            approval = await self.client.wait_for_approval(answer.approval.id, approval_timeout)
        except errors.ApprovalTimeout:
            return Authorization(answer, await self.client.get_approval(answer.approval.id), timed_out=True)
        if approval.state != "approved":
            return Authorization(answer, approval)
        again = await self.tool_call(
            tool, arguments or {}, approval_id=approval.id, call_id=_approved_id(answer.call_id)
        )
        return Authorization(again, approval)

    async def record_result(self, call_id: str, output: Any, status: str = "ok") -> m.Appended:
        return (await self.events([_result_event(call_id, output, status)]))[0]

    async def call(self, tool: str, fn: Callable[..., Any], arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
        """:meth:`Run.call` for a coroutine function or a plain one."""
        import inspect

        auth = await self.authorize(tool, arguments, **kw)
        if not auth.allowed:
            raise errors.ToolDenied(auth.reason, code=auth.effect, receipt=auth.receipt)
        try:
            output = fn(**auth.arguments)
            if inspect.isawaitable(output):
                output = await output
        except Exception as e:
            await self.record_result(auth.call_id, f"{type(e).__name__}: {e}", status="error")
            raise
        await self.record_result(auth.call_id, output)
        return output

    async def decisions(self, **filters: Any) -> list[m.RecordedDecision]:
        return await self.client.decisions(self.id, **filters)

    async def post_contract(self, contract: m.HandoffContract) -> m.Posted:
        return await self.client.create_contract(contract)

    async def finish(self, status: m.FinalStatus = "succeeded") -> m.RunView:
        self.view = await self.client.finish_run(self.id, status)
        return self.view

    def openai(self, **kwargs: Any) -> Any:
        from openai import OpenAI

        return OpenAI(**self._openai_settings(self.client.url, self.client.token, kwargs))

    def async_openai(self, **kwargs: Any) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(**self._openai_settings(self.client.url, self.client.token, kwargs))
