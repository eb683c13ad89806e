#!/bin/sh
# Prints the table of docs/PERFORMANCE.md "A crash state costs what it
# changed": ten rollback-journal transactions (workload.sh DELETE FULL 10)
# on a table of MB megabytes (rows of 1,000 random bytes made by --setup),
# checked under posix by check-lookup.sh (one primary-key lookup per
# acknowledged row), -j 2, with each materializer. One recording per size
# (-o), checked again with --trace for the next materializer. Each run has
# the default check budget (60 s past the representatives): where the
# states cost too much to check them all, the rate is over those checked.
# "lost/torn bytes" is the mean, over the distinct states, of the bytes
# the writes a state lost or tore would have written.
#
#   BLACKOUT=path/to/blackout examples/sqlite/size.sh [MB...]
#   BLACKOUT=... MATERIALIZERS="fuse" examples/sqlite/size.sh 1024
#
# MB defaults to 1 60 1024; MATERIALIZERS to "dir fuse".
set -eu
blackout=${BLACKOUT:-blackout}
here=$(cd "$(dirname "$0")" && pwd)
sizes=${*:-1 60 1024}
materializers=${MATERIALIZERS:-dir fuse}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
echo "| table | materializer | distinct states | checked | check | states/s | written per state | read per state | lost/torn bytes per state | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mb in $sizes; do
    rows=$((mb * 1024 * 1024 / 1100))
    trace="$tmp/$mb.trace"
    for m in $materializers; do
        if [ -e "$trace" ]; then
            set -- --trace "$trace"
        else
            set -- -o "$trace" --volatile '*-shm' \
                --setup "sqlite3 db 'PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT $rows) INSERT INTO t SELECT x+1000000, randomblob(1000) FROM c;' >/dev/null" \
                -- sh "$here/workload.sh" DELETE FULL 10
        fi
        "$blackout" run -j 2 --model posix --json --verify-fixes 0 --materializer "$m" \
            --ack-prefix 'ack ' --checker "sh $here/check-lookup.sh" "$@" \
            >"$tmp/out.json" 2>"$tmp/err" || true
        [ -s "$tmp/out.json" ] || { cat "$tmp/err" >&2; exit 2; }
        "$blackout" states --model posix "$trace" >"$tmp/states" 2>/dev/null
        "$blackout" ops --json "$trace" >"$tmp/ops.json"
        python3 - "$tmp/out.json" "$tmp/states" "$tmp/ops.json" "$mb" "$m" <<'PY'
import json, re, sys
report = json.load(open(sys.argv[1]))
ops = json.load(open(sys.argv[3]))["ops"]
length = {o["index"]: o["data"]["len"] for o in ops if o["kind"] == "write"}
touched = []
for line in open(sys.argv[2]):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    n = 0
    for part in line.split(".")[1:]:
        m = re.match(r"(lost|torn)(.*)", part)
        if not m:
            continue
        for op in re.findall(r"\d+", m.group(2) if m.group(1) == "lost" else m.group(2)[:-1] or m.group(2)):
            n += length.get(int(op), 0)
    touched.append(n)
r = report["result"]
shown = r["shown"]
per = lambda b: "{:.3f} MB".format(b / shown["states"] / 1e6)
mb = int(sys.argv[4])
print("| {} | {} | {:,} | {:,} | {:.1f} s | {:.0f} | {} | {} | {:.3f} MB | {} |".format(
    "{} MB".format(mb) if mb < 1024 else "{:g} GB".format(mb / 1024), sys.argv[5],
    r["states_distinct"], r["states_checked"], r["check_seconds"],
    r["states_checked"] / r["check_seconds"], per(shown["written"]),
    per(shown["read"]) if shown["kind"] == "fuse" else "—",
    sum(touched) / max(len(touched), 1) / 1e6, report["verdict"]))
PY
    done
done
