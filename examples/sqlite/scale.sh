#!/bin/sh
# Prints the scale table of docs/PERFORMANCE.md: the sqlite3 CLI in WAL mode
# with synchronous=FULL (one connection, workload.sh) at COUNT transactions,
# checked under posix with check.sh: by default (representatives, then the
# rest within the check budget), with representatives alone
# (`budget0`: --check-budget 0) and with --exhaustive. Each row is one
# `blackout run` (recording included); wall time and peak RSS are
# /usr/bin/time's.
#
#   BLACKOUT=path/to/blackout examples/sqlite/scale.sh [COUNT...]
#   BLACKOUT=... MODES="default budget0" examples/sqlite/scale.sh 1000
#
# COUNT defaults to 100 300 1000; MODES to "default exhaustive".
set -eu
blackout=${BLACKOUT:-blackout}
here=$(cd "$(dirname "$0")" && pwd)
counts=${*:-100 300 1000}
modes=${MODES:-default exhaustive}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| transactions | exploration | ops | states | classes | checked of distinct | explore | check | wall | peak RSS | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for count in $counts; do
    for mode in $modes; do
        flag=
        [ "$mode" = exhaustive ] && flag=--exhaustive
        [ "$mode" = budget0 ] && flag="--check-budget 0"
        # shellcheck disable=SC2086 # $flag is empty or one word
        /usr/bin/time -f '%e %M' -o "$tmp/time" "$blackout" run --model posix $flag \
            --ack-prefix 'ack ' --volatile '*-shm' --json \
            --setup "sqlite3 db 'PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null" \
            --checker "sh $here/check.sh" -- sh "$here/workload.sh" WAL FULL "$count" \
            >"$tmp/out.json" 2>/dev/null || true
        python3 - "$tmp/out.json" "$tmp/time" "$count" "$mode" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
wall, rss = open(sys.argv[2]).read().split()[-2:]
r = report["result"]
m = r["models"][0]
classes = m["coverage"].get("classes")
mode = {"budget0": "representatives alone"}.get(sys.argv[4], sys.argv[4])
print("| {} | {} | {:,} | {:,} | {} | {:,} of {:,}{} | {:.1f} s | {:.1f} s | {:.1f} s | {} MB | {} |".format(
    sys.argv[3], mode, report["ops"], m["states"],
    len(classes) if classes else "—", r["states_checked"], r["states_distinct"],
    "" if r["exact"] else " (a sample)",
    r["explore_seconds"], r["check_seconds"], float(wall), int(rss) // 1024,
    report["verdict"]))
EOF
    done
done
