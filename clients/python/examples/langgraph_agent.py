#!/usr/bin/env python3
"""The support desk as a LangGraph graph, under Tollgate.

The same tools and request as examples/support_agent.py, in one ReAct-style graph (a model
node and a tool node): Tollgate decides every tool call before it runs (examples/support.yaml),
the model calls go through the gateway.

    TOLLGATE_URL=http://127.0.0.1:8000 TOLLGATE_TOKEN=tg_... python examples/langgraph_agent.py
"""

from __future__ import annotations

import os
import sys

import desk
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from tollgate import Tollgate
from tollgate.integrations.langgraph import chat_model, tool_node

TOOLS = [desk.lookup_order, desk.add_note, desk.delete_customer, desk.issue_refund]
# LangGraph has no handoffs here: one agent, so the script's transfer line is skipped.
REQUEST = "\n".join(line for line in desk.REQUEST.splitlines() if "transfer_to_" not in line)


def build(run):
    model = chat_model(run, "gpt-4.1-mini").bind_tools(TOOLS)
    timeout = float(os.environ.get("APPROVAL_TIMEOUT", "300"))
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", tool_node(TOOLS, run, tool_names=desk.POLICY_NAMES, approval_timeout=timeout))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "model")
    return graph.compile()


def main() -> int:
    tollgate = Tollgate()
    with tollgate.open_run(agent="support", task="refund-7", scope="org:acme/support", clearance="confidential") as run:
        print(f"run {run.id} governed by {', '.join(run.governing)}", flush=True)
        state = build(run).invoke({"messages": [HumanMessage(REQUEST)]})
        print("final:", state["messages"][-1].content, flush=True)
    for d in tollgate.decisions(run.id):
        print(f"  #{d.seq:>3} {d.kind:<8} {d.effect:<17} {d.subject or '':<24} {', '.join(d.rules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
