#!/usr/bin/env bash
# Instructions per tool-call decision over HTTP, counted by callgrind: repeatable whatever else
# the machine is doing (wall-clock figures on a shared 2-core VM are not). Runs the release
# gateway under valgrind with the sample envelopes, sends 50 warm-up calls, zeroes the
# counters, sends N calls on one keep-alive connection, dumps, and prints the total, the count
# per call and the heaviest inclusive functions of the gateway.
#
#   bash benches/gateway/profile.sh [N]        # default 500 calls; needs valgrind and python3
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
N="${1:-500}"
PORT=8302
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install -y valgrind" >&2; exit 2; }
cd "$ROOT"
cargo build -q --release -p tollgate
WORK=$(mktemp -d)
cd "$WORK"
TOLLGATE_TOKEN=t valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$ROOT/target/release/tollgate" serve --port $PORT --envelopes "$ROOT/fixtures/envelopes" \
  >gw.out 2>gw.log &
GW=$!
trap 'kill $GW 2>/dev/null || true; wait $GW 2>/dev/null || true; cd /; rm -rf "$WORK"' EXIT
for _ in $(seq 120); do grep -q listening gw.out 2>/dev/null && break; sleep 0.5; done
python3 - "$PORT" "$N" <<'PY'
import http.client, json, subprocess, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
h = {"Authorization": "Bearer t", "Content-Type": "application/json"}
c.request("POST", "/v1/runs", json.dumps({"id": "bench", "agent": "coder", "task": "T-12",
          "scope": "org:acme/repo:api/task:T-12", "clearance": "confidential"}), h)
r = c.getresponse(); r.read(); assert r.status == 201, r.status
def call(i):
    body = json.dumps({"tool": "fs.read_file", "arguments": {"path": f"src/file{i}.rs"}})
    c.request("POST", "/v1/runs/bench/tool-calls", body, h)
    r = c.getresponse(); r.read(); assert r.status == 200, r.status
for i in range(50):
    call(i)
subprocess.run(["callgrind_control", "-z"], capture_output=True, check=True)
for i in range(n):
    call(1000 + i)
subprocess.run(["callgrind_control", "-d"], capture_output=True, check=True)
PY
OUT=$(ls "$WORK"/cg.out.* | head -1)
TOTAL=$(callgrind_annotate "$OUT" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "calls: $N; instructions: $TOTAL; per call: $((TOTAL / N))"
callgrind_annotate --inclusive=yes "$OUT" 2>/dev/null | grep -v "'2" \
  | grep -E 'tollgate_(gateway|rules|engine)::|sqlite3_step|Json<T> as axum' | head -25 \
  | sed -E 's/^ *([0-9,]+) \( *[0-9.]+%\) +(\?\?\?:)?([^[]*).*/\1 \3/' \
  | awk -v n="$N" '{c = $1; gsub(",", "", c); $1 = ""; printf "%10d %s\n", c / n, substr($0, 1, 110)}'
