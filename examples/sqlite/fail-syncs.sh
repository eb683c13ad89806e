#!/bin/sh
# Prints the table of docs/FAILED-SYNCS.md: every sync call site of the
# sqlite3 CLI (workload.sh, COUNT transactions) made to fail with EIO in
# turn (`blackout run --fail-syncs`), in WAL mode with synchronous FULL and
# NORMAL and in DELETE mode with FULL: the call that failed, what sqlite3
# did, and whether an acknowledged row can then be lost.
#
#   BLACKOUT=path/to/blackout examples/sqlite/fail-syncs.sh [COUNT]
#
# COUNT defaults to 8.
set -eu
blackout=${BLACKOUT:-blackout}
here=$(cd "$(dirname "$0")" && pwd)
count=${1:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| journal | synchronous | call site | the call that failed | what sqlite3 did |"
echo "|---|---|---|---|---|"
for config in "WAL FULL" "WAL NORMAL" "DELETE FULL"; do
    # shellcheck disable=SC2086 # two words on purpose
    set -- $config
    "$blackout" run --model posix --fail-syncs --ack-prefix 'ack ' --volatile '*-shm' --json \
        --setup "sqlite3 db 'PRAGMA journal_mode=$1; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null" \
        --checker "sh $here/check.sh" -- sh "$here/workload.sh" "$1" "$2" "$count" \
        >"$tmp/out.json" 2>/dev/null || true
    python3 - "$tmp/out.json" "$1" "$2" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))["result"]
for c in r["failed_syncs"]["sites"]:
    failed = re.sub(r" \(log line \d+\)", "", c.get("failed", "—"))
    v = c["verdict"]
    if v == "handled":
        said = f" ({c['said']})" if c.get("said") else ""
        did = f"PASS: exited {c['exit']}{said}" if c.get("exit") else "PASS: went on"
        if not c["promised"]:
            did += ", nothing acknowledged"
        else:
            did += ", every state keeps every acknowledged row"
    elif v == "trusted":
        how = "retried the sync" if c["trust"] == "retried" else "ignored the error"
        did = f"FAIL: {how}; `{c['state']}`: {c['reason'].strip()}"
    elif v == "not_worse":
        did = f"no worse: {c['failing']} states fail, none because the sync failed"
    else:
        did = f"not measured: {c['why']}"
    did = did.replace("|", "\\|")
    print(f"| {sys.argv[2]} | {sys.argv[3]} | `{c['site']['call']}` | {failed} | {did} |")
PY
done
