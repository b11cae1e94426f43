#!/usr/bin/env bash
# The Tollgate demo: starts the gateway on the default store (.tollgate/tollgate.db) with the
# sample envelopes of fixtures/envelopes, runs the example agent (the official `openai` Python
# client plus plain HTTP tool calls) through it, approves the agent's gated call from the CLI
# as a human would, then stops the gateway and shows the run it recorded.
#
# Needs a Rust toolchain and python3 with venv; the openai package is installed into
# .tollgate/venv on first use. PORT picks the port (default: a free one). TOLLGATE_BIN runs
# that binary instead of building one (a release build, say). DEMO_DIR (default .tollgate)
# holds the demo's logs and the venv.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${TOLLGATE_BIN:-}" ]; then
  BIN="$TOLLGATE_BIN"
else
  echo "--- building tollgate (the first build takes several minutes; later ones, seconds)"
  cargo build -q -p tollgate
  # Wherever cargo puts it: CARGO_TARGET_DIR, a config's target-dir, or target/.
  TARGET_DIR=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  BIN="$TARGET_DIR/debug/tollgate"
fi
if [ ! -x "$BIN" ]; then
  echo "demo: no tollgate binary at $BIN" >&2
  exit 1
fi
DEMO_DIR="${DEMO_DIR:-.tollgate}"
mkdir -p "$DEMO_DIR"

# Port 0 lets the system pick a free port; the gateway prints the one it got.
LOG=$DEMO_DIR/demo-gateway.log
"$BIN" serve --port "${PORT:-0}" --envelopes fixtures/envelopes >"$LOG" 2>&1 &
GATEWAY=$!
trap 'kill "$GATEWAY" 2>/dev/null || true' EXIT
URL=""
for _ in $(seq 100); do
  URL=$(grep -o 'listening on http://[^ ]*' "$LOG" | head -1 | awk '{print $3}' || true)
  [ -n "$URL" ] && break
  kill -0 "$GATEWAY" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "demo: the gateway did not start. The last lines of its log ($LOG):" >&2
  tail -n 20 "$LOG" >&2
  if grep -q "already in use" "$LOG"; then
    echo "demo: port ${PORT:-0} is taken (a gateway started from the README may hold it): stop it, or run PORT=8001 bash examples/demo.sh, or leave PORT unset for a free port" >&2
  fi
  exit 1
fi
echo "listening on $URL"

if [ ! -x "$DEMO_DIR/venv/bin/python" ]; then
  echo "--- installing the openai package into $DEMO_DIR/venv (once)"
  python3 -m venv "$DEMO_DIR/venv"
  "$DEMO_DIR/venv/bin/pip" install -q -r examples/agent/requirements.txt
fi

# The agent gets a credential of its own: agent `coder`, within org:acme, cleared no higher
# than confidential. It can open and drive its runs, and approve nothing.
AGENT_TOKEN=$("$BIN" tokens create --kind agent --agent coder --max-scope org:acme \
  --max-clearance confidential --expires 1d 2>/dev/null)

AGENT_OUT=$DEMO_DIR/demo-agent.out
# Emptied first: the loop below may read it before the agent's shell truncates it, and a
# second demo would otherwise find the first one's approval.
: >"$AGENT_OUT"
TOLLGATE_TOKEN="$AGENT_TOKEN" "$DEMO_DIR/venv/bin/python" examples/agent/agent.py \
  --url "$URL" >"$AGENT_OUT" 2>&1 &
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
