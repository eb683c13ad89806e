#!/bin/sh
# End-to-end checking speed against the bare cost of spawning `true`.
#
#   examples/bench/check-rate.sh [BLACKOUT]
#
# Records examples/bench/appender.py 50 (50 unsynced appends: thousands of
# distinct posix crash states), then checks every state with the checker
# `true` (--consistency-only: `true` cannot fail, so the pre-check is skipped)
# and compares the states checked per second with a shell loop spawning
# /bin/true 2000 times, on one core and as one loop per core.
set -e
here=$(cd "$(dirname "$0")" && pwd)
blackout=${1:-$here/../../target/release/blackout}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

"$blackout" record -o "$work/app.trace" -- python3 "$here/appender.py" 50 2>/dev/null

loop() { i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i + 1)); done; }
now() { date +%s.%N; }

t0=$(now); loop; t1=$(now)
one=$(echo "2000 / ($t1 - $t0)" | bc -l)
cpus=$(nproc)
t0=$(now)
n=0; while [ $n -lt "$cpus" ]; do loop & n=$((n + 1)); done; wait
t1=$(now)
all=$(echo "2000 * $cpus / ($t1 - $t0)" | bc -l)

t0=$(now)
"$blackout" run --trace "$work/app.trace" --model posix --consistency-only \
    --checker true --json > "$work/r.json" || true
t1=$(now)
python3 - "$work/r.json" "$one" "$all" "$cpus" "$t0" "$t1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
one, allc, cpus = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
wall = float(sys.argv[6]) - float(sys.argv[5])
m = r["models"][0]
rate = r["states_checked"] / r["check_seconds"]
print(f"posix states enumerated: {m['states']}, distinct (checked): {r['checked']}")
print(f"engine (enumerate, build, hash): {r['explore_seconds']:.3f} s = {m['states'] / r['explore_seconds']:.0f} states/s")
print(f"checking: {r['check_seconds']:.2f} s = {rate:.0f} states/s with -j{cpus}; whole run {wall:.2f} s")
print(f"bare /bin/true from a shell loop: {one:.0f}/s on one core, {allc:.0f}/s with {cpus} loops")
print(f"checked states/s vs bare: {100 * rate / one:.0f}% of one loop, {100 * rate / allc:.0f}% of {cpus} loops")
PY
