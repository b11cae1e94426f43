"""The framework adapters' tools, called as their frameworks call them, against a real
gateway: what the examples' end-to-end runs (tests/python_client.rs) cannot reach with the
fake provider, whose requests are redacted before it scripts a call."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import SCOPE

from tollgate import Tollgate

SECRET = "AKIAPYDATUTGFKRXITKP"


def test_openai_agents_tool_runs_with_redacted_arguments_and_records_its_result(agent: Tollgate, task: str) -> None:
    agents = pytest.importorskip("agents")
    from tollgate.integrations.openai_agents import govern

    seen = []

    @agents.function_tool
    def add_note(customer_id: int, text: str) -> str:
        """Adds a note."""
        seen.append(text)
        return "noted"

    @agents.function_tool
    def delete_customer(customer_id: int) -> str:
        """Deletes a customer."""
        seen.append("deleted")
        return "deleted"

    base = agents.Agent(name="desk", model="gpt-4.1-mini", tools=[add_note, delete_customer])
    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        governed = govern(base, run, prefix="crm")
        note, delete = governed.tools
        ctx = agents.tool_context.ToolContext(
            context=None, tool_name="add_note", tool_call_id="call_note_1", tool_arguments="{}"
        )
        out = asyncio.run(note.on_invoke_tool(ctx, json.dumps({"customer_id": 1, "text": f"key {SECRET}"})))
        assert out == "noted"
        assert SECRET not in seen[0] and "REDACTED" in seen[0]
        refused = asyncio.run(delete.on_invoke_tool(ctx, json.dumps({"customer_id": 1})))
        assert refused.startswith("Tollgate: call not run, deny") and len(seen) == 1
        bad = asyncio.run(note.on_invoke_tool(ctx, "[1, 2]"))
        assert "not a JSON object" in bad
    tool = agent.decisions(run.id, kind="tool")
    # The SDK's tool-call id is the call's id in the receipts.
    assert [(d.subject, d.effect) for d in tool] == [("call_note_1", "redact"), ("call_note_1", "deny")]
    # The original agent is untouched: its tools still run ungoverned where it is used as is.
    assert base.tools[0] is add_note


def test_langgraph_tool_runs_with_redacted_arguments_and_refuses_with_a_tool_message(
    agent: Tollgate, task: str
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool

    from tollgate.integrations.langgraph import govern_tools

    seen = []

    @tool
    def add_note(customer_id: int, text: str) -> str:
        """Adds a note."""
        seen.append(text)
        return "noted"

    @tool
    def delete_customer(customer_id: int) -> str:
        """Deletes a customer."""
        seen.append("deleted")
        return "deleted"

    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        note, delete = govern_tools([add_note, delete_customer], run, prefix="crm")
        call = {"type": "tool_call", "name": "add_note", "id": "call_lg_1", "args": {"customer_id": 1, "text": SECRET}}
        message = note.invoke(call)
        assert isinstance(message, ToolMessage) and message.content == "noted"
        assert seen == ["[REDACTED:support-desk/secrets-redacted]"]
        refused = delete.invoke(
            {"type": "tool_call", "name": "delete_customer", "id": "call_lg_2", "args": {"customer_id": 1}}
        )
        assert isinstance(refused, ToolMessage) and refused.status == "error"
        assert "no-deleting-customers" in refused.content and len(seen) == 1
        # Called directly (not by a ToolNode), the answer is the tool's own.
        assert note.invoke({"customer_id": 2, "text": "plain"}) == "noted"
        assert asyncio.run(note.ainvoke({"customer_id": 3, "text": "async"})) == "noted"
    effects = [d.effect for d in agent.decisions(run.id, kind="tool")]
    assert effects == ["redact", "deny", "allow", "allow"]


def test_openai_agents_handoff_is_recorded_and_posted_as_a_typed_contract(
    agent: Tollgate, admin: Tollgate, task: str
) -> None:
    agents = pytest.importorskip("agents")
    from agents.run_context import RunContextWrapper

    from tollgate.integrations.openai_agents import govern

    refunds = agents.Agent(name="refunds", model="gpt-4.1-mini")
    triage = agents.Agent(name="triage", model="gpt-4.1-mini", handoffs=[refunds])
    refunds.handoffs = [triage]  # a cycle: each governed once
    built = []

    def contract(input_json):
        built.append(input_json)
        return {"goal": "Refund order 7 after checking it", "template": "lightweight"}

    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        governed = govern(triage, run, contracts={"refunds": contract})
        handoff = governed.handoffs[0]
        target = asyncio.run(handoff.on_invoke_handoff(RunContextWrapper(context=None), ""))
        assert target.name == "refunds" and target is not refunds
        assert target.handoffs[0].agent_name == "triage"
        assert built == [None]
        stored = admin.get_contract(f"{run.id}-to-refunds-1")
        assert stored["contract"]["contract"]["consumer"]["agent"] == "refunds"
        assert stored["contract"]["contract"]["producer"]["run"] == run.id
    # The handoff is a step of the run (and a `handoff` event in it).
    assert agent.get_run(run.id).summary.steps >= 1
