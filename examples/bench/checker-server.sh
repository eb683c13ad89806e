#!/bin/sh
# Checking speed, a checker spawned per state against a checker server, on
# one recording of the SQLite workload (DELETE, synchronous=OFF: ~1,550
# distinct posix states). Prints a Markdown table; docs/PERFORMANCE.md
# quotes it.
#
#   examples/bench/checker-server.sh [BLACKOUT]
#
# BLACKOUT defaults to target/release/blackout; PYTHON to python3.
set -eu
here=$(cd "$(dirname "$0")/../sqlite" && pwd)
blackout=${1:-target/release/blackout}
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM HUP
"$blackout" record -o "$work/run.trace" --volatile '*-shm' \
    --setup "sqlite3 db 'PRAGMA journal_mode=delete; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null" \
    -- "$here/workload.sh" delete off >/dev/null 2>&1
echo "| checker | how | distinct states | checking | states/s | rejected |"
echo "|---|---|---|---|---|---|"
run() {
    "$blackout" run --trace "$work/run.trace" --model posix --verify-fixes 0 --budget 16 \
        --ack-prefix 'ack ' "$2" "$3" --json 2>/dev/null >"$work/out.json" || true
    "$python" - "$1" "$2" "$work/out.json" <<'PY'
import json, sys
name, how, path = sys.argv[1:]
r = json.load(open(path))["result"]
m = r["models"][0]
print(f"| {name} | `{how}` | {r['checked']} | {r['check_seconds']:.1f} s | "
      f"{r['checked'] / r['check_seconds']:,.0f} | {len(m['failing'])} |")
PY
}
run "sqlite3 CLI (check.sh)" --checker "sh $here/check.sh"
run "sqlite3 CLI (check-server.sh)" --checker-server "sh $here/check-server.sh"
run "Python sqlite3 (check-server.py)" --checker "$python $here/check-server.py"
run "Python sqlite3 (check-server.py)" --checker-server "$python $here/check-server.py"
