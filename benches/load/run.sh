#!/usr/bin/env bash
# The gateway under load, side by side, in one run, as one table (issue 18):
#   1. a bare axum route answering fixed JSON (the floor; gateway/examples/bare_axum.rs)
#   2. POST /v1/runs/{id}/tool-calls on `tollgate serve` with its embedded store, recording on
#   3. POST /v1/chat/completions through `tollgate serve` to a mock upstream that answers at once
#      (benches/load/src/bin/mock_upstream.rs), whole and streamed — an unmodified OpenAI-style
#      request, no Tollgate header (the implicit run), so LiteLLM gets the same request
#   4. the same chat request through LiteLLM's proxy (`litellm[proxy]` from PyPI, installed into
#      benches/load/.venv) to the same mock upstream; skipped with a note when it cannot install
#   and the mock upstream alone, so each proxy's overhead is its latency minus the mock's.
# Closed loop at 1, 8 and 64 connections; open loop at fixed rates with latencies from each
# request's due time (coordinated omission corrected). Servers are pinned to core 0 and the load
# generator to core 1 when the machine has two cores (taskset); the table says so.
#
#   bash benches/load/run.sh [SECONDS] [RATES]     # default 10 s per row; rates "200 1000"
#   CONNS="1 8" SKIP_LITELLM=1 bash benches/load/run.sh 2 "100"   # a quick look
#   ROWS="chat mock" bash benches/load/run.sh                      # only rows naming these
#   POSTGRES=1 ROWS="tool-call" bash benches/load/run.sh            # + the store on PostgreSQL
#   BASELINE_BIN=/path/to/older/tollgate ROWS="tool-call bare" bash benches/load/run.sh
#       # + the tool-call rows of an older build in the same run (before / after)
# Tool calls are made with an agent's token (made through POST /v1/tokens), as agents make them:
# an admin's token would also write an audit-log row per call. Chat keeps the admin token.
# With POSTGRES=1 (issue 37) a second gateway records on a throwaway PostgreSQL cluster
# (scripts/pg-throwaway, Debian's PostgreSQL) started on the servers' core, so "server on one
# core" holds the database too; its tool-call row stands beside the embedded SQLite one.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
SECS="${1:-10}"
RATES="${2:-200 1000}"
CONNS="${CONNS:-1 8 64}"

cargo build -q --release -p tollgate
cargo build -q --release -p tollgate-gateway --example bare_axum
(cd benches/load && cargo build -q --release)
BIN="$ROOT/target/release/tollgate"
BARE="$ROOT/target/release/examples/bare_axum"
LOAD="$ROOT/benches/load/target/release/loadgen"
MOCK="$ROOT/benches/load/target/release/mock_upstream"

if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  SERVE=(taskset -c 0)
  DRIVE=(taskset -c 1)
  PLACED="servers on core 0, load generator on core 1 (taskset)"
else
  SERVE=()
  DRIVE=()
  PLACED="servers and load generator share the cores (no taskset or one core)"
fi

WORK=$(mktemp -d)
PIDS=()
PG_DIR=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "$PG_DIR" ] || "$ROOT/scripts/pg-throwaway" stop "$PG_DIR"
  cd /; rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

wait_for() { for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; cat "$1" >&2; return 1; }

"${SERVE[@]}" "$MOCK" 8310 >mock.out 2>&1 & PIDS+=($!)
"${SERVE[@]}" "$BARE" 8311 >bare.out 2>&1 & PIDS+=($!)
TOKEN=bench-token-0123456789
export TOLLGATE_TOKEN_KEY=$(printf '7%.0s' $(seq 64))
TOLLGATE_TOKEN=$TOKEN TOLLGATE_PROVIDER=openai PROVIDER_API_KEY=sk-mock \
  TOLLGATE_PROVIDER_BASE_URL=http://127.0.0.1:8310/v1 \
  "${SERVE[@]}" "$BIN" serve --port 8312 --no-worker \
  --envelopes "$ROOT/fixtures/envelopes" --envelopes "$ROOT/examples/envelopes" >gw.out 2>gw.log & PIDS+=($!)
wait_for mock.out listening; wait_for bare.out listening; wait_for gw.out listening
PG_PORT=""
if [ -n "${POSTGRES:-}" ]; then
  PG_DIR=$(mktemp -d /tmp/tollgate-bench-pg.XXXXXX)
  PG_URL=$("${SERVE[@]}" "$ROOT/scripts/pg-throwaway" start "$PG_DIR")
  TOLLGATE_DATABASE_URL=$PG_URL TOLLGATE_TOKEN=$TOKEN \
    "${SERVE[@]}" "$BIN" serve --port 8314 --no-worker \
    --envelopes "$ROOT/fixtures/envelopes" --envelopes "$ROOT/examples/envelopes" >gwpg.out 2>gwpg.log & PIDS+=($!)
  wait_for gwpg.out listening
  PG_PORT=8314
fi
BASE_PORT=""
if [ -n "${BASELINE_BIN:-}" ]; then
  mkdir baseline
  (cd baseline && TOLLGATE_TOKEN=$TOKEN exec "${SERVE[@]}" "$BASELINE_BIN" serve --port 8315 --no-worker \
    --envelopes "$ROOT/fixtures/envelopes" --envelopes "$ROOT/examples/envelopes" >out 2>log) & PIDS+=($!)
  wait_for baseline/out listening
  BASE_PORT=8315
fi

AUTH="Authorization: Bearer $TOKEN"
declare -A AGENT_AUTH
for port in 8312 $PG_PORT $BASE_PORT; do
  agent=$(curl -sf -X POST http://127.0.0.1:$port/v1/tokens -H "$AUTH" -H 'Content-Type: application/json' \
    -d '{"kind":"agent","name":"coder","max_scope":"org:acme","max_clearance":"confidential"}' \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
  AGENT_AUTH[$port]="Authorization: Bearer $agent"
  curl -sf -X POST http://127.0.0.1:$port/v1/runs -H "${AGENT_AUTH[$port]}" -H 'Content-Type: application/json' \
    -d '{"id":"bench","agent":"coder","task":"T-12","scope":"org:acme/repo:api/task:T-12","clearance":"confidential"}' >/dev/null
done
TOOL='{"tool":"fs.read_file","arguments":{"path":"src/lib.rs"}}'
# Denied by default: nothing permits it, so its receipt's why-not lists every permitting rule.
TOOL_DENIED='{"tool":"net.upload","arguments":{"url":"https://example.com/x"}}'
CHAT='{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"Is this change safe to merge?"}]}'
CHAT_STREAM='{"model":"gpt-4.1-mini","stream":true,"messages":[{"role":"user","content":"Is this change safe to merge?"}]}'
# Warm: the run's policy engine, the implicit run of the day.
for port in 8312 $PG_PORT $BASE_PORT; do
  curl -sf -X POST http://127.0.0.1:$port/v1/runs/bench/tool-calls -H "${AGENT_AUTH[$port]}" -H 'Content-Type: application/json' -d "$TOOL" | grep -q '"effect":"allow"'
  curl -sf -X POST http://127.0.0.1:$port/v1/runs/bench/tool-calls -H "${AGENT_AUTH[$port]}" -H 'Content-Type: application/json' -d "$TOOL_DENIED" | grep -q '"effect":"deny"'
done
curl -sf -X POST http://127.0.0.1:8312/v1/chat/completions -H "$AUTH" -H 'Content-Type: application/json' -d "$CHAT" | grep -q 'chat.completion'

LITELLM=""
VENV="$ROOT/benches/load/.venv"
if [ -z "${SKIP_LITELLM:-}" ] && [ ! -x "$VENV/bin/litellm" ]; then
  (python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --disable-pip-version-check 'litellm[proxy]') >litellm-install.log 2>&1 || true
fi
if [ -z "${SKIP_LITELLM:-}" ] && [ -x "$VENV/bin/litellm" ]; then
  cat >litellm.yaml <<YAML
model_list:
  - model_name: gpt-4.1-mini
    litellm_params:
      model: openai/gpt-4.1-mini
      api_base: http://127.0.0.1:8310/v1
      api_key: sk-mock
YAML
  LITELLM_KEY=sk-bench-0123456789
  LITELLM_MASTER_KEY=$LITELLM_KEY "${SERVE[@]}" "$VENV/bin/litellm" --config litellm.yaml --port 8313 --num_workers 1 >litellm.out 2>&1 & PIDS+=($!)
  if wait_for litellm.out "Uvicorn running"; then
    curl -sf -X POST http://127.0.0.1:8313/v1/chat/completions -H "Authorization: Bearer $LITELLM_KEY" \
      -H 'Content-Type: application/json' -d "$CHAT" >/dev/null && LITELLM=8313
  fi
fi

echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(grep MemTotal /proc/meminfo | awk '{print int($2/1048576)}') GiB; $SECS s per row after 2 s of warm-up"
echo "placement: $PLACED"
[ -n "$LITELLM" ] || echo "LiteLLM: not measured (install log: $(tail -1 litellm-install.log 2>/dev/null || echo none))"
printf '%-40s %6s %4s %12s %12s %12s %12s %s\n' row loop conns throughput p50 p99 p99.9 errors
row() { # label url body [header...]
  local label=$1 url=$2 body=$3; shift 3
  # ROWS="chat mock": only the rows whose label holds one of these words.
  if [ -n "${ROWS:-}" ]; then
    local hit=""
    for w in $ROWS; do case "$label" in *"$w"*) hit=1;; esac; done
    [ -n "$hit" ] || return 0
  fi
  local hs=()
  for h in "$@"; do hs+=(-H "$h"); done
  for c in $CONNS; do
    "${DRIVE[@]}" "$LOAD" "$url" --body "$body" "${hs[@]}" -c "$c" -d "$SECS" --label "$label"
  done
  for r in $RATES; do
    "${DRIVE[@]}" "$LOAD" "$url" --body "$body" "${hs[@]}" -c 64 -d "$SECS" --rate "$r" --label "$label"
  done
}
row "bare axum (fixed JSON)" http://127.0.0.1:8311/v1/runs/bench/tool-calls "$TOOL"
row "tollgate tool-call (decided, recorded)" http://127.0.0.1:8312/v1/runs/bench/tool-calls "$TOOL" "${AGENT_AUTH[8312]}"
row "tollgate tool-call, default deny" http://127.0.0.1:8312/v1/runs/bench/tool-calls "$TOOL_DENIED" "${AGENT_AUTH[8312]}"
if [ -n "$BASE_PORT" ]; then
  row "baseline tool-call (decided, recorded)" http://127.0.0.1:$BASE_PORT/v1/runs/bench/tool-calls "$TOOL" "${AGENT_AUTH[$BASE_PORT]}"
  row "baseline tool-call, default deny" http://127.0.0.1:$BASE_PORT/v1/runs/bench/tool-calls "$TOOL_DENIED" "${AGENT_AUTH[$BASE_PORT]}"
fi
if [ -n "$PG_PORT" ]; then
  row "tollgate tool-call on PostgreSQL" http://127.0.0.1:$PG_PORT/v1/runs/bench/tool-calls "$TOOL" "${AGENT_AUTH[$PG_PORT]}"
fi
row "mock upstream, whole" http://127.0.0.1:8310/v1/chat/completions "$CHAT"
row "mock upstream, streamed" http://127.0.0.1:8310/v1/chat/completions "$CHAT_STREAM"
row "tollgate chat → mock, whole" http://127.0.0.1:8312/v1/chat/completions "$CHAT" "$AUTH"
row "tollgate chat → mock, streamed" http://127.0.0.1:8312/v1/chat/completions "$CHAT_STREAM" "$AUTH"
if [ -n "$LITELLM" ]; then
  row "litellm chat → mock, whole" http://127.0.0.1:8313/v1/chat/completions "$CHAT" "Authorization: Bearer $LITELLM_KEY"
  row "litellm chat → mock, streamed" http://127.0.0.1:8313/v1/chat/completions "$CHAT_STREAM" "Authorization: Bearer $LITELLM_KEY"
fi
events=$(curl -sf http://127.0.0.1:8312/v1/runs/bench -H "$AUTH" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["events"])')
echo "events recorded in run bench: $events"
