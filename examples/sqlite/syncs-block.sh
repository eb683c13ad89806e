#!/bin/sh
# Prints the real-file-system table of docs/SYNCS.md: every sync call site
# of the sqlite3 CLI (workload.sh in WAL mode with synchronous FULL, COUNT
# transactions) judged under posix and measured on ext4, xfs and btrfs
# (`blackout run --backend block --syncs`: the program run again without
# each site's syncs), for crashes until the program exits and, with
# --settle SETTLE, for crashes after the file system's own later commits.
# Needs root, /dev/fuse and mkfs.xfs/mkfs.btrfs.
#
#   BLACKOUT=path/to/blackout examples/sqlite/syncs-block.sh [COUNT [SETTLE]]
#
# COUNT defaults to 20, SETTLE (seconds) to 7 (ext4 commits every 5 s).
set -eu
blackout=${BLACKOUT:-blackout}
here=$(cd "$(dirname "$0")" && pwd)
count=${1:-20}
settle=${2:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| file system | crashes | call site | posix model | on the file system |"
echo "|---|---|---|---|---|"
for fs in ext4 xfs btrfs; do
    for when in exit settle; do
        extra=
        [ "$when" = settle ] && extra="--settle $settle"
        # shellcheck disable=SC2086 # --settle and its value, or nothing
        "$blackout" run --backend block --fs "$fs" $extra --model posix --syncs \
            --ack-prefix 'ack ' --volatile '*-shm' --json \
            --setup "sqlite3 db 'PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null" \
            --checker "sh $here/check.sh" -- sh "$here/workload.sh" WAL FULL "$count" \
            >"$tmp/out.json" 2>/dev/null || true
        python3 - "$tmp/out.json" "$fs" "$when" "$settle" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["posix"]["result"]
fs, when, settle = sys.argv[2:5]
crashes = "until exit" if when == "exit" else f"{settle} s after the last ack"
for c in r["syncs"]["sites"]:
    on = c["on_fs"]
    cell = on["verdict"].replace("_", " ")
    if on["verdict"] == "needed":
        cell += f": `{on['state']}` {on['reason'].strip()}"
    elif on["verdict"] == "not_needed":
        n = on["distinct"]
        cell += f" ({n} distinct state{'' if n == 1 else 's'})"
    else:
        cell += f": {on['why']}"
    cell = cell.replace("|", "\\|")
    print(f"| {fs} | {crashes} | `{c['site']['call']}` | {c['verdict'].replace('_', ' ')} | {cell} |")
PY
    done
done
