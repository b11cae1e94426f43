#!/usr/bin/env bash
# The gateway load benchmark: tool-call decision requests per second and latency at 1, 16 and
# 64 connections, for `tollgate serve` (decide under the sample envelopes, record the call and
# its decision, answer with the receipt) and for a bare axum route returning a fixed JSON
# (`gateway/examples/bare_axum.rs`) in the same run; peak memory (VmHWM) of each server.
# Needs wrk (`apt-get install -y wrk`).
#
#   bash benches/gateway/run.sh [SECONDS]      # default 10 s per point
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
SECS="${1:-10}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install -y wrk" >&2; exit 2; }
cargo build -q --release -p tollgate
cargo build -q --release -p tollgate-gateway --example bare_axum
BIN="$ROOT/target/release/tollgate"
BARE="$ROOT/target/release/examples/bare_axum"
WORK=$(mktemp -d)
export TOKEN=bench-token
cd "$WORK"
TOLLGATE_TOKEN=$TOKEN "$BIN" serve --port 8300 --envelopes "$ROOT/fixtures/envelopes" >gw.out 2>gw.log &
GW=$!
"$BARE" 8301 >bare.out 2>&1 &
BA=$!
trap 'kill $GW $BA 2>/dev/null || true; cd /; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q listening gw.out 2>/dev/null && grep -q listening bare.out && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:8300/v1/runs -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -d '{"id":"bench","agent":"coder","task":"T-12","scope":"org:acme/repo:api/task:T-12","clearance":"confidential"}' >/dev/null
# One warm-up call: the run's policy engine is materialised on its first decision.
curl -sf -X POST http://127.0.0.1:8300/v1/runs/bench/tool-calls -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{"tool":"fs.read_file","arguments":{"path":"a"}}' | grep -q '"effect":"allow"'

echo "machine: $(nproc) cores, $(grep MemTotal /proc/meminfo | awk '{print int($2/1048576)}') GiB; wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'); $SECS s per point"
printf '%-9s %5s %12s %10s %10s %10s\n' server conns req/s p50 p90 p99
for c in 1 16 64; do
  for target in gateway:8300 bare:8301; do
    name=${target%%:*}; port=${target##*:}
    threads=$(( c < 2 ? 1 : 2 ))
    out=$(wrk -t"$threads" -c"$c" -d"${SECS}s" --latency -s "$ROOT/benches/gateway/tool_call.lua" \
      "http://127.0.0.1:$port/v1/runs/bench/tool-calls")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p90=$(echo "$out" | awk '$1=="90%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $4}')
    printf '%-9s %5s %12s %10s %10s %10s %s\n' "$name" "$c" "$rps" "$p50" "$p90" "$p99" "${non2xx:+non-2xx: $non2xx}"
  done
done
echo "peak memory: gateway $(awk '/VmHWM/ {print $2, $3}' /proc/$GW/status), bare axum $(awk '/VmHWM/ {print $2, $3}' /proc/$BA/status)"
events=$(curl -sf http://127.0.0.1:8300/v1/runs/bench -H "Authorization: Bearer $TOKEN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["events"])')
echo "events recorded in run bench: $events"
