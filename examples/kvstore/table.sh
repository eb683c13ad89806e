#!/bin/sh
# Prints the "kvstore with 5,000 loads" table of docs/PERFORMANCE.md: the
# store without bugs and each planted bug of examples/kvstore recorded with
# `kvstore [--bug B] load N` (N = 5000 unless given; a compaction, the
# snapshot rewritten whole, after every 4 puts) and checked under posix with
# the store's own checker, every setting at its default (representative
# crash points above 500 ops, fix verification bounded by the run's own
# time). Each bug is also run with `load 8`, the workload of
# docs/kvstore.md, and the last column says whether the verdict and every
# cause (its kind and blamed op) are the same at both sizes. Wall time and
# peak RSS are those of `blackout run --trace` (GNU time); recording is not
# counted. A run still going after LIMIT seconds (default 300, the goal of
# five minutes) is stopped (SIGTERM: blackout cleans up and says it was
# interrupted) and its row says so.
#
#   cargo build --release -p blackout-cli -p kvstore
#   BLACKOUT=target/release/blackout KVSTORE=target/release/kvstore \
#       examples/kvstore/table.sh [N]
#
# It takes about 17 minutes on 2 cores (most of it the checker, one
# process per distinct state, and the two runs stopped at LIMIT). With
# KEEP=DIR the traces, JSON reports and GNU time's output are left in DIR
# (which must exist) for a closer look, and a run whose report is already
# there is not made again (the table is then only rendered anew).
set -eu
blackout=${BLACKOUT:-blackout}
kvstore=${KVSTORE:-kvstore}
n=${1:-5000}
limit=${LIMIT:-300}
if [ -n "${KEEP:-}" ]; then
    work=$KEEP
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

# run BUG LOADS: records and checks one bug; leaves $work/BUG-LOADS.json and
# $work/BUG-LOADS.time.
run() {
    if [ "$1" = none ]; then flags=""; else flags="--bug $1"; fi
    if [ ! -s "$work/$1-$2.time" ]; then
        # shellcheck disable=SC2086 # $flags is empty or two words
        "$blackout" record -o "$work/$1-$2.trace" -- "$kvstore" $flags load "$2" 2>/dev/null
        # exit 1 (FAIL) is a result here, not an error
        /usr/bin/time -v -o "$work/$1-$2.time" timeout "$limit" "$blackout" run \
            --trace "$work/$1-$2.trace" --model posix --checker "$kvstore $flags check" \
            --json >"$work/$1-$2.json" 2>/dev/null || true
    fi
    [ -s "$work/$1-$2.last-op" ] ||
        "$blackout" ops "$work/$1-$2.trace" | tail -n 1 | awk '{print $1}' >"$work/$1-$2.last-op"
}

echo "| bug | ops | crash points explored | classes | states | checked of distinct | explore | check | fix verification (bound) | wall | peak RSS | verdict | causes (kind: blamed op) | load $n = load 8 |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"
for bug in none $("$kvstore" bugs | cut -d' ' -f1); do
    run "$bug" 8
    run "$bug" "$n"
    python3 - "$work/$bug-$n.json" "$work/$bug-$n.time" "$work/$bug-8.json" "$bug" \
        "$(cat "$work/$bug-$n.last-op")" <<'EOF'
import json, re, sys

big, time_file, small, bug, last_op = sys.argv[1:]


def blamed(op):
    # Log line numbers depend on how the program was started, not on what
    # it does.
    return re.sub(r", log lines? [0-9-]+", "", op)


def findings(report):
    m = report["result"]["models"][0]
    return m["verdict"], sorted({(g["cause"]["kind"], blamed(g["cause"]["op"])) for g in m["causes"]})


def count(n):
    return f"{n:,}"


times = open(time_file).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", times).group(1)
parts = [float(p) for p in wall.split(":")]
seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", times).group(1)) / 1024
d = json.load(open(big))
if "result" not in d:
    # Stopped at the time limit (or failed): what is known.
    cells = [f"`{bug}`", count(int(last_op) + 1)] + ["—"] * 7
    cells += [f"{seconds:.0f} s", f"{rss:.0f} MiB", f"not finished: {d['error']}", "—", "not known"]
    print("| " + " | ".join(cells) + " |")
    sys.exit(0)
r = d["result"]
m = r["models"][0]
cov = m["coverage"]
classes = cov.get("classes")
points = count(cov["crash_points"])
if classes:
    total = sum(c["crash_points"] for c in classes)
    explored = sum(len(c["explored"]) for c in classes)
    points = count(explored) + " of " + count(total)
    if cov.get("full_crash_points"):
        points += ", then " + count(cov["full_crash_points"]) + " in full"
verdict, causes = findings(d)
cut = sum(1 for g in m["causes"] if (g.get("fix") or {}).get("cut_short"))
fix = f"{r['fix_seconds']:.1f} s ({r['fix_bound_seconds']:.1f} s)"
if cut:
    fix += f", {cut} cut short"
same = "yes" if findings(json.load(open(small))) == (verdict, causes) else "**no**"
cells = [
    f"`{bug}`",
    count(d["ops"]),
    points,
    count(len(classes)) if classes else "—",
    count(m["states"]),
    count(m["states_checked"]) + " of " + count(m["distinct"]) + ("" if m["exact"] else " (a sample)"),
    f"{r['explore_seconds']:.1f} s",
    f"{r['check_seconds']:.1f} s",
    fix,
    f"{seconds:.0f} s",
    f"{rss:.0f} MiB",
    verdict,
    "; ".join(f"`{k}`: {op}" for k, op in causes) or "—",
    same,
]
print("| " + " | ".join(cells) + " |")
EOF
done
