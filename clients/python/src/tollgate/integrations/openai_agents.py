"""The OpenAI Agents SDK under a Tollgate run.

    from tollgate import Tollgate
    from tollgate.integrations.openai_agents import govern
    run = Tollgate().open_run(agent="support", task="refund", scope="org:acme/support")
    result = Runner.run_sync(govern(agent, run), "Refund order 7")

:func:`govern` returns a copy of the agent (and of every agent it hands off to) whose

- function tools are decided by the run's envelopes before they run: a denied call does not
  run and the model gets the reason (with the receipt) as the tool's result; a call needing
  approval waits for a human (``approval_timeout``); a redacted call runs with the arguments
  policy returned; every result is recorded in the run;
- model calls go through the gateway's OpenAI-compatible proxy in this run (Chat Completions);
- handoffs are recorded as steps of the run, and where ``contracts`` names the receiving
  agent, the handoff is posted as a typed handoff contract, which the handoff pack judges
  before the receiving agent starts (a rejected contract stops the handoff).

Tracing export to OpenAI is the SDK's own business: set ``OPENAI_AGENTS_DISABLE_TRACING=1``
(or ``agents.set_tracing_disabled(True)``) where no OpenAI key is meant to be used.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from agents import Agent, FunctionTool, Handoff, handoff
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

from .. import errors
from .. import models as m
from . import AnyRun, ToolNames, authorize, call_run, policy_name, record_result, safe_call_id

__all__ = ["HandoffRejected", "govern"]

ContractBuilder = Callable[[str | None], Mapping[str, Any]]


class HandoffRejected(errors.TollgateError):
    """The handoff pack refused the contract of a handoff: the receiving agent did not start."""


def govern(
    agent: Agent[Any],
    run: AnyRun,
    *,
    tool_names: ToolNames = None,
    prefix: str | None = None,
    approval_timeout: float = 300.0,
    contracts: Mapping[str, ContractBuilder] | None = None,
) -> Agent[Any]:
    """A copy of ``agent`` under ``run`` (a :class:`tollgate.Run` or :class:`tollgate.AsyncRun`).

    ``tool_names`` maps a tool's name to the name policy knows it by (``{"issue_refund":
    "payments.refund"}``, or a function); else ``prefix`` makes it ``PREFIX.NAME``; else the
    tool's own name is used. ``contracts`` maps a receiving agent's name to a function of the
    handoff's input (JSON text, or ``None``) returning the contract's fields (``goal``,
    ``evidence``, ``constraints``, ``template``...); the producer, the consumer and the id are
    filled in.
    """
    return _Governor(run, tool_names, prefix, approval_timeout, dict(contracts or {})).agent(agent)


class _Governor:
    def __init__(
        self,
        run: AnyRun,
        names: ToolNames,
        prefix: str | None,
        timeout: float,
        contracts: dict[str, ContractBuilder],
    ) -> None:
        self.run = run
        self.names = names
        self.prefix = prefix
        self.timeout = timeout
        self.contracts = contracts
        self.done: dict[int, Agent[Any]] = {}
        self.counter = itertools.count(1)

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        key = id(agent)
        if key in self.done:
            return self.done[key]
        governed = agent.clone(
            tools=[self.tool(t) for t in agent.tools],
            model=self.model(agent),
        )
        # Registered before its handoffs are governed: agents may hand back to each other.
        self.done[key] = governed
        self.done[id(governed)] = governed
        governed.handoffs = [self.handoff(h) for h in agent.handoffs]
        return governed

    def model(self, agent: Agent[Any]) -> OpenAIChatCompletionsModel:
        chosen = agent.model
        if chosen is None:
            from agents.models import get_default_model

            name = get_default_model()
        elif isinstance(chosen, str):
            name = chosen
        elif isinstance(getattr(chosen, "model", None), str):
            name = str(getattr(chosen, "model"))  # noqa: B009
        else:
            raise ValueError(
                f"agent {agent.name!r}: its model {chosen!r} names no model; give the agent a "
                "model name so its calls can go through the gateway"
            )
        return OpenAIChatCompletionsModel(model=name, openai_client=self.run.async_openai())

    def tool(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            # Hosted tools (web search, code interpreter...) run on OpenAI's side, which the
            # gateway's Chat Completions proxy does not offer; refuse rather than run ungoverned.
            raise ValueError(
                f"tool {getattr(tool, 'name', tool)!r} is not a function tool: Tollgate governs "
                "function tools only (wrap the capability in a @function_tool)"
            )
        name = policy_name(tool.name, self.names, self.prefix)
        original = tool.on_invoke_tool
        run, timeout = self.run, self.timeout

        async def invoke(ctx: Any, input_json: str) -> Any:
            try:
                arguments = json.loads(input_json) if input_json else {}
            except json.JSONDecodeError:
                arguments = None
            if not isinstance(arguments, dict):
                return f"Tollgate: call not run, its arguments are not a JSON object: {input_json[:200]}"
            call_id = safe_call_id(getattr(ctx, "tool_call_id", None))
            auth = await authorize(run, name, arguments, call_id, timeout)
            if not auth.allowed:
                return auth.reason
            try:
                output = await original(ctx, json.dumps(auth.arguments))
            except Exception as e:
                await record_result(run, auth.call_id, f"{type(e).__name__}: {e}", "error")
                raise
            await record_result(run, auth.call_id, output)
            return output

        return dataclasses.replace(tool, on_invoke_tool=invoke)

    def handoff(self, item: Any) -> Handoff[Any, Any]:
        h = item if isinstance(item, Handoff) else handoff(item)
        original = h.on_invoke_handoff

        async def invoke(ctx: Any, input_json: str) -> Agent[Any]:
            target = await original(ctx, input_json)
            governed = self.agent(target)
            await self.record_handoff(target.name, input_json or None)
            return governed

        return dataclasses.replace(h, on_invoke_handoff=invoke)

    async def record_handoff(self, to: str, input_json: str | None) -> None:
        await call_run(self.run, "step", f"handoff to {to}", to)
        builder = self.contracts.get(to)
        payload: dict[str, Any] = {"to": to, "framework": "openai-agents"}
        if builder is not None:
            fields = dict(builder(input_json))
            fields.setdefault("id", f"{self.run.id}-to-{to}-{next(self.counter)}")
            fields["producer"] = {"run": self.run.id, **fields.get("producer", {})}
            fields["consumer"] = {"agent": to, **fields.get("consumer", {})}
            contract = m.HandoffContract.model_validate(fields)
            try:
                stored = await call_run(self.run, "post_contract", contract)
            except errors.Forbidden as e:
                raise HandoffRejected(
                    f"handoff to {to} refused: {e.message}",
                    status=e.status,
                    code=e.code,
                    details=e.details,
                    receipt=e.receipt,
                ) from e
            payload["contract"] = f"{stored.contract.id}@{stored.contract.version}"
        await call_run(self.run, "events", [m.EventInput(kind="handoff", payload=payload)])
