#!/usr/bin/env python3
"""PostgreSQL with synchronous standbys under `blackout soak --node`.

    blackout soak --crashes 50 --seed 1 --ack-prefix ok --faults all \
      --node a='python3 postgres.py serve' --node b='python3 postgres.py serve' \
      --node c='python3 postgres.py serve' \
      --setup 'python3 postgres.py setup' --ready 'python3 postgres.py ready' \
      --client 'python3 postgres.py load' --checker 'python3 postgres.py check'

One node is the primary and every other node a synchronous standby
streaming from it (`synchronous_standby_names = 'ANY n-1 (every node)'`: a
commit returns once every standby confirmed it). Each node's data directory
is pg/ on its mount; its socket is in its soak directory (no TCP).

SYNC is synchronous_commit and FSYNC is fsync, on every node:
- SYNC=on FSYNC=on (the default; PostgreSQL's own defaults): a commit
  returns once its WAL is flushed on the primary and on every standby.
- SYNC=remote_write FSYNC=off (the unsafe setting): a commit returns once
  every standby has *received* its WAL (written, not flushed:
  "synchronous_commit = remote_write ... the data could be lost if both
  the standby operating system crashes and the database crashes on the
  primary", and with fsync off nothing is ever flushed). A one-node crash
  keeps it on the others; every node losing power at once loses it.

setup   (per node) on the first node only: initdb, the table, stopped
        cleanly. The other nodes' data directories are cloned at their
        first start.
serve   (per node) the failover rule:
        - another node runs as the primary: this node's data directory is
          cloned from it again (pg_basebackup; what it kept after a crash is
          never trusted), and it starts as a standby of that primary;
        - no node runs as the primary, standbys do (the primary went down):
          the standby that received the most WAL is promoted, the others
          follow it, and this node is cloned from it;
        - no node runs: this node starts as the primary on what its disk
          kept (as the first node in start order does after every node lost
          power).
ready   (per node) the server accepts connections and, on a standby, its WAL
        receiver is streaming; once every node runs, the primary streams
        to every standby.
load    finds the primary and INSERTs one row per transaction, printing
        `ok K` once its COMMIT returned.
check   finds the primary and reads every acknowledged row back from it.
"""

import os
import shutil
import subprocess
import sys
import time


def pg_bin():
    base = "/usr/lib/postgresql"
    versions = sorted(os.listdir(base), key=lambda v: [int(x) for x in v.split(".")])
    return os.path.join(base, versions[-1], "bin")


BIN = os.environ.get("PG_BIN") or pg_bin()
SYNC = os.environ.get("SYNC", "on")
FSYNC = os.environ.get("FSYNC", "on")


def names():
    return os.environ["BLACKOUT_NODES"].split()


def sock(name):
    return os.environ["BLACKOUT_SOAK_DIR_" + name.upper()]


def data(name):
    return os.path.join(os.environ["BLACKOUT_MOUNT_" + name.upper()], "pg")


def as_pg(args, **kw):
    if os.getuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    return subprocess.run(args, **kw)


def sql(name, query, timeout=10):
    """The rows `query` returns on `name` (one string each), or None when
    its server does not answer."""
    try:
        r = as_pg([BIN + "/psql", "-h", sock(name), "-d", "postgres", "-X", "-q", "-At",
                   "-v", "ON_ERROR_STOP=1", "-c", query],
                  capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        return None
    return r.stdout.split()


def in_recovery(name):
    """True on a standby, False on the primary, None when it does not run."""
    rows = sql(name, "SELECT pg_is_in_recovery()", timeout=3)
    return None if not rows else rows[0] == "t"


def primary():
    for n in names():
        if in_recovery(n) is False:
            return n
    return None


def conninfo(of, me):
    return "host=%s user=postgres application_name=%s" % (sock(of), me)


def clone(me, of):
    d = data(me)
    if os.path.exists(d):
        shutil.rmtree(d)
    as_pg([BIN + "/pg_basebackup", "-d", conninfo(of, me), "-D", d, "-X", "stream",
           "-c", "fast"], check=True, stdout=sys.stderr)
    with open(os.path.join(d, "postgresql.auto.conf"), "a") as f:
        f.write("primary_conninfo = '%s'\n" % conninfo(of, me))
    open(os.path.join(d, "standby.signal"), "w").close()
    shutil.chown(os.path.join(d, "standby.signal"), "postgres", "postgres")


def promote_most_advanced(me):
    """Promotes the running standby that received the most WAL and points
    the others at it: its name, or None when no standby runs."""
    lsns = []
    for n in names():
        if n == me:
            continue
        rows = sql(n, "SELECT pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')", timeout=3)
        if rows:
            lsns.append((float(rows[0]), n))
    if not lsns:
        return None
    _, new = max(lsns, key=lambda t: (t[0], -names().index(t[1])))
    sql(new, "SELECT pg_promote()", timeout=60)
    print("promoted %s (the primary went down)" % new, file=sys.stderr, flush=True)
    for _, n in lsns:
        if n != new:
            sql(n, "ALTER SYSTEM SET primary_conninfo = '%s'" % conninfo(new, n))
            sql(n, "SELECT pg_reload_conf()")
    return new


def setup():
    me = os.environ["BLACKOUT_NODE"]
    if me != names()[0]:
        return
    d = data(me)
    as_pg([BIN + "/initdb", "-D", d, "-A", "trust", "--no-instructions"], check=True,
          stdout=subprocess.DEVNULL)
    as_pg([BIN + "/pg_ctl", "-D", d, "-o", "-k %s -c listen_addresses=" % sock(me), "-w", "-s",
           "start"], check=True)
    try:
        sql(me, "CREATE TABLE acked (k bigint PRIMARY KEY, v text NOT NULL)")
    finally:
        as_pg([BIN + "/pg_ctl", "-D", d, "-m", "fast", "-w", "-s", "stop"], check=True)


def serve():
    me = os.environ["BLACKOUT_NODE"]
    d = data(me)
    # No server of this node runs: what it left of its lock files is stale.
    for stale in [os.path.join(d, "postmaster.pid"),
                  os.path.join(sock(me), ".s.PGSQL.5432"),
                  os.path.join(sock(me), ".s.PGSQL.5432.lock")]:
        if os.path.exists(stale):
            os.unlink(stale)
    p = primary() or promote_most_advanced(me)
    if p is not None:
        print("%s starts as a standby of %s" % (me, p), file=sys.stderr, flush=True)
        clone(me, p)
    else:
        print("%s starts as the primary" % me, file=sys.stderr, flush=True)
        signal = os.path.join(d, "standby.signal")
        if os.path.exists(signal):
            os.unlink(signal)
    standbys = len(names()) - 1
    args = [BIN + "/postgres", "-D", d, "-k", sock(me), "-c", "listen_addresses=",
            "-c", "synchronous_commit=" + SYNC, "-c", "fsync=" + FSYNC,
            # WAL kept for a standby that follows a promoted node from
            # before the promotion's checkpoint.
            "-c", "wal_keep_size=128MB",
            "-c", "synchronous_standby_names=ANY %d (%s)" % (standbys, ", ".join(names()))]
    if os.getuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    os.execvp(args[0], args)


def ready():
    me = os.environ["BLACKOUT_NODE"]
    r = in_recovery(me)
    if r is None:
        sys.exit(1)
    if r:
        rows = sql(me, "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")
        if rows != ["1"]:
            sys.exit(1)
    # Once every node runs, the primary streams to every standby (a standby
    # that follows a promoted primary may take a moment to).
    if all(in_recovery(n) is not None for n in names()):
        p = primary()
        rows = p and sql(p, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
        if rows != [str(len(names()) - 1)]:
            sys.exit(1)


def load():
    base = int(os.environ["BLACKOUT_CRASH"]) * 10**7
    while True:
        p = primary()
        if p is not None:
            break
        time.sleep(0.1)
    args = ["stdbuf", "-oL", BIN + "/psql", "-h", sock(p), "-d", "postgres", "-X", "-q", "-At",
            "-v", "ON_ERROR_STOP=1"]
    if os.getuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    psql = subprocess.Popen(args, stdin=subprocess.PIPE, text=True)
    for k in range(base, base + 10**7):
        psql.stdin.write("INSERT INTO acked VALUES (%d, 'v%d');\n\\echo ok %d\n" % (k, k, k))
    psql.stdin.close()
    psql.wait()


def check():
    with open(os.environ["BLACKOUT_ACKS_FILE"]) as f:
        acked = [line.split()[1] for line in f if line.startswith("ok ")]
    p = primary()
    if p is None:
        print("no node is the primary")
        sys.exit(1)
    rows = sql(p, "SELECT k FROM acked", timeout=60)
    if rows is None:
        print("the primary %s did not answer" % p)
        sys.exit(1)
    have = set(rows)
    gone = [k for k in acked if k not in have]
    if gone:
        lost = os.environ.get("BLACKOUT_LOST_POWER", "") or "none"
        print("%d of %d acknowledged commits are gone from the primary %s "
              "(first: k=%s, last: k=%s; lost power: %s)"
              % (len(gone), len(acked), p, gone[0], gone[-1], lost))
        sys.exit(1)


if __name__ == "__main__":
    {"setup": setup, "serve": serve, "ready": ready, "load": load, "check": check}[
        sys.argv[1]
    ]()
