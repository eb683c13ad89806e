#!/bin/sh
# Prints the block backend's row of docs/PERFORMANCE.md "A crash state
# costs what it changed": the same ten rollback-journal transactions as
# size.sh (workload.sh DELETE FULL 10 on a table of MB megabytes, checked
# by check-lookup.sh), run on a real file system (--backend block, ext4 by
# default), -j 2. Each crash state's image is the worker's cursor image
# copied (a reflink where the scratch file system has them, else its data
# extents) with the state's kept writes applied, then mounted, read,
# checked and unmounted; the row says where the time went per state.
#
#   BLACKOUT=path/to/blackout examples/sqlite/block-size.sh [MB...]
#   BLACKOUT=... FS=xfs examples/sqlite/block-size.sh 1 60
#
# MB defaults to 1 60; the device is 64 MB plus three times the table.
set -eu
blackout=${BLACKOUT:-blackout}
fs=${FS:-ext4}
here=$(cd "$(dirname "$0")" && pwd)
sizes=${*:-1 60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| table | fs | states checked | distinct | states/s | build ms/state | mount ms/state | read ms/state | check ms/state | unmount ms/state |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mb in $sizes; do
    rows=$((mb * 1024 * 1024 / 1100))
    "$blackout" run --backend block --fs "$fs" --fs-size "$((64 + 3 * mb))M" \
        -j 2 --json --verify-fixes 0 --ack-prefix 'ack ' --volatile '*-shm' \
        --setup "sqlite3 db 'PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT $rows) INSERT INTO t SELECT x+1000000, randomblob(1000) FROM c;' >/dev/null" \
        --checker "sh $here/check-lookup.sh" \
        -- sh "$here/workload.sh" DELETE FULL 10 >"$tmp/out.json" 2>"$tmp/err" || true
    [ -s "$tmp/out.json" ] || { cat "$tmp/err" >&2; exit 2; }
    python3 - "$tmp/out.json" "$mb" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["block"]
mb = int(sys.argv[2])
n = max(b["states_checked"], 1)
ms = lambda step: "{:.1f}".format(b["time"][step] / n * 1000)
print("| {} | {} | {:,} | {:,} | {:.0f} | {} | {} | {} | {} | {} |".format(
    "{} MB".format(mb) if mb < 1024 else "{:g} GB".format(mb / 1024), b["fs"],
    b["states_checked"], b["distinct"], b["states_per_second"],
    ms("build"), ms("mount"), ms("read"), ms("check"), ms("unmount")))
PY
done
