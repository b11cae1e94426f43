"""Framework adapters: put an agent framework's agents under a Tollgate run.

- :mod:`tollgate.integrations.openai_agents` (``pip install 'tollgate-client[openai-agents]'``)
- :mod:`tollgate.integrations.langgraph` (``pip install 'tollgate-client[langgraph]'``)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from .._run import AsyncRun, Authorization, Run

AnyRun = Run | AsyncRun
ToolNames = Mapping[str, str] | Callable[[str], str] | None


def policy_name(tool: str, names: ToolNames, prefix: str | None) -> str:
    """The name policy knows a framework's tool by: ``names[tool]`` (a mapping or a function),
    else ``PREFIX.tool``, else the tool's own name."""
    if callable(names):
        return names(tool)
    if names is not None and tool in names:
        return names[tool]
    return f"{prefix}.{tool}" if prefix else tool


async def authorize(
    run: AnyRun, tool: str, arguments: dict[str, Any], call_id: str | None, timeout: float
) -> Authorization:
    """:meth:`Run.authorize` from async code, whichever kind of run it is (a blocking run's
    HTTP calls go to a worker thread, so the event loop is never blocked)."""
    if isinstance(run, AsyncRun):
        return await run.authorize(tool, arguments, call_id=call_id, approval_timeout=timeout)
    return await asyncio.to_thread(run.authorize, tool, arguments, call_id=call_id, approval_timeout=timeout)


async def record_result(run: AnyRun, call_id: str, output: Any, status: str = "ok") -> None:
    if isinstance(run, AsyncRun):
        await run.record_result(call_id, output, status)
    else:
        await asyncio.to_thread(run.record_result, call_id, output, status)


async def call_run(run: AnyRun, method: str, *args: Any, **kwargs: Any) -> Any:
    """Calls ``run.METHOD`` from async code, for either kind of run."""
    fn = getattr(run, method)
    if isinstance(run, AsyncRun):
        return await fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


def safe_call_id(raw: str | None) -> str | None:
    """A framework's tool-call id when the gateway takes it as a call id, else none (the
    gateway then names the call)."""
    if not raw or len(raw) > 128:
        return None
    if all(c.isascii() and (c.isalnum() or c in "-_.:") for c in raw):
        return raw
    return None
