#!/usr/bin/env bash
# The MCP gateway's overhead on tools/call, side by side, in one run, as one table (issue 34):
# `tools/call` through Tollgate against the same upstream called directly, stdio and HTTP, at
# one and at eight concurrent sessions; targets p50 overhead ≤ 0.5 ms, p99 ≤ 2 ms.
#   1. direct stdio: benches/load/src/bin/mcp_echo.rs on stdio, a child process per session
#   2. tollgate stdio: `tollgate mcp proxy --config mcp.yaml`, one per session, each launching
#      its own mcp_echo upstream and deciding each call by policy (recorded, with a receipt)
#   3. direct http: mcp_echo over streamable HTTP at /mcp, a session per client
#   4. tollgate http: `tollgate serve --mcp-config mcp.yaml` at /v1/mcp (bearer token), a session
#      per client, each with its own mcp_echo upstream on stdio
# The client is benches/load/src/bin/mcp_bench.rs (rmcp). Servers (and the upstreams they start)
# are pinned to core 0 and the client to core 1 when the machine has two cores (taskset).
#
#   bash benches/load/mcp.sh [SECONDS]                  # default 10 s per row
#   SESSIONS=1 TRANSPORTS=stdio bash benches/load/mcp.sh 2   # a quick look
#   TOLLGATE=/path/to/tollgate bash benches/load/mcp.sh      # another build (not rebuilt)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
SECS="${1:-10}"
SESSIONS="${SESSIONS:-1,8}"
TRANSPORTS="${TRANSPORTS:-stdio,http}"

TREE="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- engine rules gateway cli Cargo.toml Cargo.lock migrations 2>/dev/null || echo ', with uncommitted changes')"
if [ -z "${TOLLGATE:-}" ]; then
  cargo build -q --release -p tollgate
  TOLLGATE="$ROOT/target/release/tollgate"
  BUILT="built now from $TREE"
else
  BUILT="given, not rebuilt: modified $(date -r "$TOLLGATE" '+%F %T'); the tree is at $TREE"
fi
(cd benches/load && cargo build -q --release --bin mcp_bench --bin mcp_echo)
BENCH="$ROOT/benches/load/target/release/mcp_bench"

PIN=()
DRIVE=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN=(--server-cpu 0)
  DRIVE=(taskset -c 1)
  PLACED="servers and their upstreams on core 0, client on core 1 (taskset)"
else
  PLACED="servers and client share the cores (no taskset or one core)"
fi

echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(grep MemTotal /proc/meminfo | awk '{print int($2/1048576)}') GiB"
echo "placement: $PLACED"
echo "tollgate: $TOLLGATE ($BUILT)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine widens every row, the tails most)"
"${DRIVE[@]}" "$BENCH" --tollgate "$TOLLGATE" "${PIN[@]}" -d "$SECS" \
  --sessions "$SESSIONS" --transports "$TRANSPORTS" ${KEEP:+--keep}
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
