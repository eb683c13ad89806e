#!/bin/sh
# Prints the table of docs/SYNCS.md: every sync call site of the sqlite3 CLI
# (workload.sh, COUNT transactions) judged with `blackout run --syncs` under
# posix, in WAL mode with synchronous FULL and NORMAL and in DELETE mode
# with FULL: each site's calls, the time they took while recording
# (strace -T), and whether the site is needed (the simplest state that then
# fails, and why) or not.
#
#   BLACKOUT=path/to/blackout examples/sqlite/syncs.sh [COUNT]
#
# COUNT defaults to 20.
set -eu
blackout=${BLACKOUT:-blackout}
here=$(cd "$(dirname "$0")" && pwd)
count=${1:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| journal | synchronous | run verdict | call site | calls | time while recording | verdict | without it |"
echo "|---|---|---|---|---:|---:|---|---|"
for config in "WAL FULL" "WAL NORMAL" "DELETE FULL"; do
    # shellcheck disable=SC2086 # two words on purpose
    set -- $config
    "$blackout" run --model posix --syncs --ack-prefix 'ack ' --volatile '*-shm' --json \
        --setup "sqlite3 db 'PRAGMA journal_mode=$1; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null" \
        --checker "sh $here/check.sh" -- sh "$here/workload.sh" "$1" "$2" "$count" \
        >"$tmp/out.json" 2>/dev/null || true
    python3 - "$tmp/out.json" "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
for c in r["syncs"]["sites"]:
    secs = c.get("seconds")
    took = "—" if secs is None else f"{secs * 1000:.2f} ms"
    verdict = c["verdict"].replace("_", " ")
    if not c["exact"]:
        verdict += f" (on {c['states_checked']:,} of {c['states']:,} states)"
    if c["verdict"] == "needed":
        said = f"`{c['state']}`: {c['reason'].strip()}"
    else:
        said = "every state passes or fails as with it"
    said = said.replace("|", "\\|")
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {r['verdict']} | `{c['site']['call']}` | {len(c['site']['ops'])} | {took} | {verdict} | {said} |")
PY
done
