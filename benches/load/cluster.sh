#!/usr/bin/env bash
# Recorded decisions per second with 1, 2 and 3 gateways on one PostgreSQL, in one run (issue
# 38): `tollgate serve` processes alike on a throwaway cluster (scripts/pg-throwaway), each
# deciding and recording tool calls of a run of its own; for N gateways, N load generators at
# once, CONNS connections in all split among them, closed loop. Throughput is the sum; the
# latencies are the worst generator's. Then the same with SQLite (gateways sharing one file)
# beside it. On two cores the gateways and PostgreSQL share core 0 and the generators core 1
# (taskset): the figure shows where the bottleneck is, not how far more machines would scale.
#
#   bash benches/load/cluster.sh [SECONDS] [CONNS]      # default 10 s, 64 connections
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
SECS="${1:-10}"
CONNS="${2:-64}"
ENGINES="${ENGINES:-postgres sqlite}"

cargo build -q --release -p tollgate
(cd benches/load && cargo build -q --release)
BIN="$ROOT/target/release/tollgate"
LOAD="$ROOT/benches/load/target/release/loadgen"
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  SERVE=(taskset -c 0); DRIVE=(taskset -c 1)
  PLACED="gateways and database on core 0, load generators on core 1 (taskset)"
else
  SERVE=(); DRIVE=()
  PLACED="everything shares the cores (no taskset or one core)"
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

TOKEN=bench-token-0123456789
AUTH="Authorization: Bearer $TOKEN"
TOOL='{"tool":"fs.read_file","arguments":{"path":"src/lib.rs"}}'
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(grep MemTotal /proc/meminfo | awk '{print int($2/1048576)}') GiB; $SECS s per row after 2 s of warm-up, $CONNS connections in all"
echo "placement: $PLACED"
printf '%-10s %8s %12s %10s %10s %s\n' engine gateways decisions/s p50 p99 errors

for engine in $ENGINES; do
  case $engine in
    postgres)
      PG_DIR=$(mktemp -d /tmp/tollgate-bench-pg.XXXXXX)
      URL=$("${SERVE[@]}" "$ROOT/scripts/pg-throwaway" start "$PG_DIR") ;;
    sqlite) URL="sqlite:$WORK/shared.db" ;;
  esac
  for n in 1 2 3; do
    ports=()
    for g in $(seq "$n"); do
      port=$((8330 + g))
      mkdir -p "gw$engine$n$g"
      (cd "gw$engine$n$g" && TOLLGATE_DATABASE_URL=$URL TOLLGATE_TOKEN=$TOKEN \
        exec "${SERVE[@]}" "$BIN" serve --port $port --no-worker \
        --envelopes "$ROOT/fixtures/envelopes" >out 2>log) & PIDS+=($!)
      ports+=("$port")
    done
    for g in $(seq "$n"); do wait_for "gw$engine$n$g/out" listening; done
    for g in $(seq "$n"); do
      run="bench-$n-$g"
      curl -sf -X POST "http://127.0.0.1:${ports[$((g - 1))]}/v1/runs" -H "$AUTH" -H 'Content-Type: application/json' \
        -d "{\"id\":\"$run\",\"agent\":\"coder\",\"task\":\"T-12\",\"scope\":\"org:acme/repo:api/task:T-12\",\"clearance\":\"confidential\"}" >/dev/null
    done
    gens=()
    for g in $(seq "$n"); do
      "${DRIVE[@]}" "$LOAD" "http://127.0.0.1:${ports[$((g - 1))]}/v1/runs/bench-$n-$g/tool-calls" \
        --body "$TOOL" -H "$AUTH" -c $((CONNS / n)) -d "$SECS" --json >"gen$engine$n$g.json" &
      gens+=($!)
    done
    for p in "${gens[@]}"; do wait "$p"; done
    python3 - "$engine" "$n" gen"$engine$n"*.json <<'PY'
import json, sys
engine, n, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [json.load(open(f)) for f in files]
print(f"{engine:<10} {n:>8} {sum(r['throughput'] for r in rows):>12.0f} "
      f"{max(r['p50_ms'] for r in rows):>8.2f}ms {max(r['p99_ms'] for r in rows):>8.2f}ms "
      f"{sum(r['errors'] for r in rows)}")
PY
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
  done
  if [ -n "$PG_DIR" ]; then "$ROOT/scripts/pg-throwaway" stop "$PG_DIR"; PG_DIR=""; fi
done
