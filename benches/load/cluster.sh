#!/usr/bin/env bash
# Recorded decisions per second with 1, 2 and 3 gateways on one PostgreSQL, in one run (issue
# 38): `tollgate serve` processes alike on a throwaway cluster (scripts/pg-throwaway), each
# deciding and recording tool calls of a run of its own; for N gateways, N load generators at
# once, CONNS connections in all split among them, closed loop. Throughput is the sum; the
# latencies are the worst generator's. Then the same with SQLite (gateways sharing one file)
# beside it. On two cores the gateways and PostgreSQL share core 0 and the generators core 1
# (taskset): the figure shows where the bottleneck is, not how far more machines would scale.
# The calls are made with an agent's token, as agents make them (an admin's would add a write
# to the audit log per call). Where the time goes: each row also prints the CPU time per decision
# of PostgreSQL's processes, of the gateways' store threads (the writer and the readers, which
# talk to the database) and of the rest of the gateways (HTTP, deciding), read from /proc over
# the measured seconds; and on PostgreSQL, how many writers waited on the schema's write lock,
# on average, sampled every 50 ms.
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
ADMIN="Authorization: Bearer $TOKEN"
# Tokens made on one gateway verify on all: one key for every gateway.
export TOLLGATE_TOKEN_KEY=$(printf '7%.0s' $(seq 64))
TOOL='{"tool":"fs.read_file","arguments":{"path":"src/lib.rs"}}'
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(grep MemTotal /proc/meminfo | awk '{print int($2/1048576)}') GiB; $SECS s per row after 2 s of warm-up, $CONNS connections in all"
echo "placement: $PLACED"
printf '%-10s %8s %12s %10s %10s %6s   %s\n' engine gateways decisions/s p50 p99 errors \
  "CPU µs a decision: database / gateways' store threads / gateways' rest; writers waiting on the lock"

# CPU seconds (user + system) so far of the database's processes, the gateways' store threads
# and the gateways' other threads, from /proc (one line: three numbers).
cpu_split() {
  python3 - "$@" <<'PY'
import os, sys
tick = os.sysconf("SC_CLK_TCK")
gateways = set(sys.argv[1:])
db = store = rest = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
        if comm == "postgres":
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            db += int(f[11]) + int(f[12])
        elif pid in gateways:
            for tid in os.listdir(f"/proc/{pid}/task"):
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                t = int(f[11]) + int(f[12])
                if name.startswith("tollgate-store"):
                    store += t
                else:
                    rest += t
    except (FileNotFoundError, ProcessLookupError):
        pass
print(db / tick, store / tick, rest / tick)
PY
}

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
    # An agent's token, made through the first gateway (the store holds it for all).
    AGENT=$(curl -sf -X POST "http://127.0.0.1:${ports[0]}/v1/tokens" -H "$ADMIN" -H 'Content-Type: application/json' \
      -d '{"kind":"agent","name":"coder","max_scope":"org:acme","max_clearance":"confidential"}' \
      | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
    AUTH="Authorization: Bearer $AGENT"
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
    # The measured seconds begin after the generators' 2 s of warm-up.
    sleep 2
    gw_pids=("${PIDS[@]: -$n}")
    before=$(cpu_split "${gw_pids[@]}")
    waiting=""
    if [ "$engine" = postgres ]; then
      "${DRIVE[@]}" python3 - "$URL" "$SECS" >"waits$n" <<'PY' &
import subprocess, sys, time
url, secs = sys.argv[1], float(sys.argv[2])
# One psql session, a sample every 50 ms: writers of this schema waiting on an advisory lock.
q = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
     "AND wait_event = 'advisory';\n")
p = subprocess.Popen(["psql", "-qAtX", url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
samples = []
end = time.monotonic() + secs - 1
while time.monotonic() < end:
    p.stdin.write(q); p.stdin.flush()
    samples.append(int(p.stdout.readline()))
    time.sleep(0.05)
p.stdin.close(); p.wait()
print(f"{sum(samples) / max(len(samples), 1):.1f}")
PY
      waiting=$!
    fi
    for p in "${gens[@]}"; do wait "$p"; done
    after=$(cpu_split "${gw_pids[@]}")
    waits="-"
    if [ -n "$waiting" ]; then wait "$waiting"; waits=$(cat "waits$n"); fi
    python3 - "$engine" "$n" "$SECS" "$before" "$after" "$waits" gen"$engine$n"*.json <<'PY'
import json, sys
engine, n, secs, before, after, waits, files = *sys.argv[1:7], sys.argv[7:]
rows = [json.load(open(f)) for f in files]
rate = sum(r['throughput'] for r in rows)
# CPU over the measured seconds, per decision (the generators' figure covers the same window).
spent = [(b - a) for a, b in zip(map(float, before.split()), map(float, after.split()))]
per = " / ".join(f"{s / (rate * float(secs)) * 1e6:.0f}" for s in spent)
print(f"{engine:<10} {n:>8} {rate:>12.0f} "
      f"{max(r['p50_ms'] for r in rows):>8.2f}ms {max(r['p99_ms'] for r in rows):>8.2f}ms "
      f"{sum(r['errors'] for r in rows):>6}   {per}; {waits}")
PY
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
  done
  if [ -n "$PG_DIR" ]; then "$ROOT/scripts/pg-throwaway" stop "$PG_DIR"; PG_DIR=""; fi
done
