#!/usr/bin/env python3
"""The checker for the SQLite workload as a checker server (`blackout run
--checker-server "python3 $PWD/examples/sqlite/check-server.py"`): the same
rules as check.sh, without a process per state. Given as `--checker` it
checks one state per process instead (for comparing the two). Opening the database runs
SQLite's own recovery (a hot rollback journal is rolled back, a WAL is
recovered); it must pass PRAGMA integrity_check, and every acknowledged row
("ack N") must be there."""
import json
import os
import sqlite3
import sys


def acknowledged(acked):
    """The row ids promised, in order: each word of a promise that starts
    with a digit (as check.sh reads them)."""
    return [int(w) for line in acked for w in line.split() if w[:1].isdigit() and w.isdigit()]


def check(request):
    """None if the state is acceptable, else why not."""
    db = os.path.join(request["dir"], "db")
    try:
        con = sqlite3.connect(db, isolation_level=None)
        try:
            first = con.execute("PRAGMA integrity_check").fetchone()[0]
            present = {row[0] for row in con.execute("SELECT id FROM t")} if first == "ok" else set()
        finally:
            con.close()
    except sqlite3.Error as e:
        return f"sqlite3 cannot read db: {e}"
    if first != "ok":
        return f"integrity_check: {first}"
    for n in acknowledged(request["acked"]):
        if n not in present:
            return f"acknowledged row {n} is missing"
    return None


if os.environ.get("BLACKOUT_CHECKER_SERVER") != "1":
    # Run as a checker spawned per state (`--checker`): the state is the
    # working directory, the promises are in BLACKOUT_ACKS_FILE.
    with open(os.environ["BLACKOUT_ACKS_FILE"], encoding="utf-8", errors="replace") as f:
        reason = check({"dir": ".", "acked": f.read().splitlines()})
    if reason is not None:
        print(reason, file=sys.stderr)
    sys.exit(0 if reason is None else 1)

for line in sys.stdin:
    reason = check(json.loads(line))
    # One line per answer: integrity_check reports a line per problem.
    print("ok" if reason is None else "fail " + " / ".join(reason.splitlines()), flush=True)
