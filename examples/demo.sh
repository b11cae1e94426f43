#!/usr/bin/env bash
# The Tollgate demo: starts the gateway on the default store (.tollgate/tollgate.db) with the
# sample envelopes of fixtures/envelopes, runs the example agent (the official `openai` Python
# client plus plain HTTP tool calls) through it, approves the agent's gated call from the CLI
# as a human would, then stops the gateway and shows the run it recorded.
#
# Needs a Rust toolchain and python3 with venv; the openai package is installed into
# .tollgate/venv on first use. PORT (default 8000) picks the port.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"

cargo build -q -p tollgate
BIN="$PWD/target/debug/tollgate"
mkdir -p .tollgate
if [ ! -x .tollgate/venv/bin/python ]; then
  python3 -m venv .tollgate/venv
  .tollgate/venv/bin/pip install -q -r examples/agent/requirements.txt
fi

LOG=.tollgate/demo-gateway.log
"$BIN" serve --port "$PORT" --envelopes fixtures/envelopes >"$LOG" 2>&1 &
GATEWAY=$!
trap 'kill "$GATEWAY" 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
grep "listening on" "$LOG" | head -1

# The agent gets a credential of its own: agent `coder`, within org:acme, cleared no higher
# than confidential. It can open and drive its runs, and approve nothing.
AGENT_TOKEN=$("$BIN" tokens create --kind agent --agent coder --max-scope org:acme \
  --max-clearance confidential --expires 1d 2>/dev/null)

AGENT_OUT=.tollgate/demo-agent.out
# Emptied first: the loop below may read it before the agent's shell truncates it, and a
# second demo would otherwise find the first one's approval.
: >"$AGENT_OUT"
TOLLGATE_TOKEN="$AGENT_TOKEN" .tollgate/venv/bin/python examples/agent/agent.py \
  --url "http://127.0.0.1:$PORT" >"$AGENT_OUT" 2>&1 &
AGENT=$!
APPROVED=""
while kill -0 "$AGENT" 2>/dev/null; do
  ID=$(grep -o 'waiting for approval apr-[0-9a-f]*' "$AGENT_OUT" | head -1 | awk '{print $4}' || true)
  if [ -n "$ID" ] && [ -z "$APPROVED" ]; then
    echo "--- a human approves $ID from the command line:"
    "$BIN" approvals approve "$ID" --by team-lead --reason "tests only, demo"
    APPROVED=1
  fi
  sleep 0.2
done
wait "$AGENT"
echo "--- the agent's output:"
cat "$AGENT_OUT"
RUN=$(head -1 "$AGENT_OUT" | awk '{print $2}')
kill -TERM "$GATEWAY"; wait "$GATEWAY" 2>/dev/null || true
trap - EXIT
echo "--- what the gateway recorded (tollgate runs show $RUN):"
"$BIN" runs show "$RUN"
"$BIN" runs verify "$RUN"
echo "--- what the memory distiller keeps of it (tollgate memory distill $RUN): typed memories"
echo "    with their score's parts and source event; later compiles in its scope retrieve them"
"$BIN" memory distill "$RUN"
