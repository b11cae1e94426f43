#!/bin/sh
# Opens this pack's demo case, runs it up to approval (workers, proposal, preview, policy) and
# prints its case_id. Then: `tollgate cases inspect CASE_ID`, `tollgate cases approve CASE_ID
# --by YOU`, `tollgate cases commit CASE_ID`. Set TOLLGATE to the binary if it is not on PATH.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "${TOLLGATE:-tollgate}" cases demo --pack-root "$here" "$@"
