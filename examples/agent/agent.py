#!/usr/bin/env python3
"""A small coding agent that routes its model calls and tool calls through Tollgate.

Model calls go through the official `openai` client pointed at the gateway
(`base_url=http://127.0.0.1:8000/v1`); tool calls are asked for over plain HTTP
before they run. The agent shows a redacted secret, a denied tool and a gated
tool that runs once a human approves it (`tollgate approvals approve ID --by team-lead`).

    python3 examples/agent/agent.py [--url http://127.0.0.1:8000] [--run RUN_ID]

The token is TOLLGATE_TOKEN (an agent's own, from `tollgate tokens create --kind agent
--agent coder`), else the gateway's owner token in `.tollgate/token`.
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from openai import OpenAI, PermissionDeniedError


def token(path):
    env = os.environ.get("TOLLGATE_TOKEN", "").strip()
    if env:
        return env
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


class Gateway:
    def __init__(self, url, tok):
        self.url = url.rstrip("/")
        self.tok = tok

    def call(self, method, path, body=None, timeout=90):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.tok)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)


def say(*parts):
    print(*parts, flush=True)


def tool(gw, run, name, arguments, approval_id=None, call_id=None):
    body = {"tool": name, "arguments": arguments}
    if approval_id:
        body["approval_id"] = approval_id
    if call_id:
        body["call_id"] = call_id
    status, answer = gw.call("POST", f"/v1/runs/{run}/tool-calls", body)
    if status != 200:
        raise SystemExit(f"tool call {name} failed: {status} {answer}")
    say(f"tool {name}: {answer['effect']} - {answer['reason']}")
    return answer


def execute(name, arguments):
    """The agent's own tools (pretend ones: this is a demo)."""
    return {"ok": True, "tool": name, "arguments": arguments}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("TOLLGATE_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token-file", default=".tollgate/token")
    p.add_argument("--run", default=None, help="run id (generated when absent)")
    p.add_argument("--approval-wait", type=int, default=60, help="seconds to wait for an approval")
    args = p.parse_args()

    gw = Gateway(args.url, token(args.token_file))
    body = {
        "agent": "coder",
        "task": "T-12",
        "scope": "org:acme/repo:api/task:T-12",
        "clearance": "confidential",
        "metadata": {"example": "examples/agent/agent.py"},
    }
    if args.run:
        body["id"] = args.run
    status, opened = gw.call("POST", "/v1/runs", body)
    if status != 201:
        raise SystemExit(f"cannot open a run: {status} {opened}")
    run = opened["run"]["id"]
    say(f"run {run} governed by {', '.join(opened['governing'])}")

    # 1. A model call through the official client; the secret in the prompt is redacted
    #    by the data rules before it leaves (the fake provider echoes what it received).
    client = OpenAI(
        base_url=gw.url + "/v1",
        api_key=gw.tok,
        default_headers={"X-Tollgate-Run": run},
    )
    reply = client.chat.completions.create(
        model="gpt-4.1-mini",
        messages=[
            {"role": "system", "content": "You fix bugs in the api repository."},
            {"role": "user", "content": "Deploy key is AKIAPYDATUTGFKRXITKP. Why does /users 404?"},
        ],
    )
    say("model:", reply.choices[0].message.content)

    # Streaming works the same way.
    chunks = client.chat.completions.create(
        model="gpt-4.1-mini",
        messages=[{"role": "user", "content": "Summarise the fix in one line."}],
        stream=True,
    )
    say("model (streamed):", "".join(c.choices[0].delta.content or "" for c in chunks if c.choices))

    # A model the envelopes do not allow is refused before anything leaves.
    try:
        client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "hi"}]
        )
        say("model gpt-5: allowed?!")
    except PermissionDeniedError as e:
        say("model gpt-5: denied -", e.body.get("message", "") if isinstance(e.body, dict) else e)

    # 2. Tool calls: asked for before they run.
    read = tool(gw, run, "fs.read_file", {"path": "src/routes/users.rs"})
    if read["execute"]:
        execute("fs.read_file", read["arguments"])
    tool(gw, run, "shell.rm", {"path": "target/"})  # denied by org-baseline/no-rm

    # 3. A gated call: wait for a human, then ask again with the approval.
    gated = tool(gw, run, "shell.exec", {"cmd": "cargo test users"}, call_id="run-tests")
    if gated["effect"] == "require_approval":
        approval = gated["approval"]["id"]
        say(f"waiting for approval {approval}: tollgate approvals approve {approval} --by team-lead")
        state = "pending"
        waited = 0
        while state == "pending" and waited < args.approval_wait:
            status, a = gw.call("GET", f"/v1/approvals/{approval}?wait=10")
            state = a["state"]
            waited += 10
        say(f"approval {approval}: {state}")
        if state == "approved":
            again = tool(gw, run, "shell.exec", {"cmd": "cargo test users"},
                         approval_id=approval, call_id="run-tests-approved")
            if again["execute"]:
                result = execute("shell.exec", again["arguments"])
                gw.call("POST", f"/v1/runs/{run}/events", {"events": [
                    {"kind": "tool_result", "payload": {"call_id": again["call_id"],
                                                       "status": "ok", "output": json.dumps(result)}}]})

    gw.call("POST", f"/v1/runs/{run}/finish", {"status": "succeeded"})
    status, decisions = gw.call("GET", f"/v2/policies/decisions/{run}")
    say(f"decisions of {run}:")
    for d in decisions["decisions"]:
        say(f"  #{d['seq']:>3} {d['kind']:<8} {d['effect']:<17} {', '.join(d['rules'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
