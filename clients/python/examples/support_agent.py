#!/usr/bin/env python3
"""A two-agent support desk on the OpenAI Agents SDK, under Tollgate.

A triage agent looks an order up, writes a note, tries to delete the customer and hands off to
a refunds agent, which issues the refund. Tollgate decides every tool call before it runs
(examples/support.yaml): the note runs with the secret redacted, the deletion is denied (the
model gets the reason, no file appears), the refund waits for a team lead
(`tollgate approvals approve ID --by team-lead`). Model calls go through the gateway.

    TOLLGATE_URL=http://127.0.0.1:8000 TOLLGATE_TOKEN=tg_... python examples/support_agent.py
"""

from __future__ import annotations

import os
import sys

import desk
from agents import Agent, Runner, function_tool

from tollgate import Tollgate
from tollgate.integrations.openai_agents import govern

refunds = Agent(
    name="refunds",
    instructions="You issue refunds for orders the triage agent checked.",
    model="gpt-4.1-mini",
    tools=[function_tool(desk.issue_refund)],
)
triage = Agent(
    name="triage",
    instructions="You triage support requests and hand refunds to the refunds agent.",
    model="gpt-4.1-mini",
    tools=[function_tool(f) for f in (desk.lookup_order, desk.add_note, desk.delete_customer)],
    handoffs=[refunds],
)


def main() -> int:
    tollgate = Tollgate()
    with tollgate.open_run(agent="support", task="refund-7", scope="org:acme/support", clearance="confidential") as run:
        print(f"run {run.id} governed by {', '.join(run.governing)}", flush=True)
        result = Runner.run_sync(
            govern(
                triage,
                run,
                tool_names=desk.POLICY_NAMES,
                approval_timeout=float(os.environ.get("APPROVAL_TIMEOUT", "300")),
            ),
            desk.REQUEST,
        )
        print("final:", result.final_output, flush=True)
        print("last agent:", result.last_agent.name, flush=True)
    for d in tollgate.decisions(run.id):
        print(f"  #{d.seq:>3} {d.kind:<8} {d.effect:<17} {d.subject or '':<24} {', '.join(d.rules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
