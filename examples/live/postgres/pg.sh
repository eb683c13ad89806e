#!/bin/sh
# PostgreSQL under `blackout soak`: its setup, service, readiness probe,
# client and checker, one subcommand each. The data directory is pg/ on the
# live mount (the working directory); the socket is in $BLACKOUT_SOAK_DIR.
# SYNC is synchronous_commit: `on` (a commit is acknowledged once its WAL
# is flushed) or `off` (acknowledged at once; the WAL is flushed within
# three wal_writer_delay periods).
# DATA_SYNC_RETRY is data_sync_retry: `off` (PostgreSQL's default: a failed
# fsync of a data file is a PANIC, and the server recovers from the WAL) or
# `on` (the checkpoint fails, and the next one retries the fsync and trusts
# its 0). CHECKPOINT_EVERY=N makes the client ask for a CHECKPOINT after
# every N rows (its error, if the checkpoint fails, does not stop the
# client), so data files are fsynced within a soak's short runs.
# LOSS_WINDOW=S: the client prints `ok K T` (T: the server's clock when
# the commit had returned) and the checker allows a commit acknowledged
# less than S seconds before the last acknowledgement of its run to be
# gone (what synchronous_commit=off documents: three wal_writer_delay).
# CHECK_INDEX=1 has the checker also verify, with amcheck, that every row
# of the table has its entry in the primary key's index.
#
#   blackout soak --setup "pg.sh setup" --ready "pg.sh ready" \
#     --client "pg.sh load" --checker "pg.sh check" --ack-prefix ok -- pg.sh serve
set -eu
SYNC=${SYNC:-on}
DATA_SYNC_RETRY=${DATA_SYNC_RETRY:-off}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-0}
BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
SOCK=$BLACKOUT_SOAK_DIR
DATA=$BLACKOUT_MOUNT/pg
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
psql_() { as_pg "$BIN/psql" -h "$SOCK" -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

case $1 in
setup)
    as_pg "$BIN/initdb" -D "$DATA" -A trust --no-instructions >/dev/null
    as_pg "$BIN/pg_ctl" -D "$DATA" -o "-k $SOCK -c listen_addresses=" -w -s start
    psql_ -c 'CREATE TABLE acked (k bigint PRIMARY KEY, v text NOT NULL)'
    if [ "${CHECK_INDEX:-0}" = 1 ]; then psql_ -c 'CREATE EXTENSION amcheck'; fi
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -s stop
    ;;
serve)
    # No server runs after a crash: what it left of its lock files is
    # stale (as an init script treats them).
    rm -f "$DATA/postmaster.pid" "$SOCK/.s.PGSQL.5432" "$SOCK/.s.PGSQL.5432.lock"
    exec runuser -u postgres -- "$BIN/postgres" -D "$DATA" -k "$SOCK" \
        -c listen_addresses= -c synchronous_commit="$SYNC" -c fsync=on \
        -c data_sync_retry="$DATA_SYNC_RETRY"
    ;;
ready)
    as_pg "$BIN/pg_isready" -h "$SOCK" -q
    ;;
load)
    # One transaction per row; `ok K` once its COMMIT returned.
    CHECKPOINT_EVERY=$CHECKPOINT_EVERY python3 -c '
import os, sys
base = int(os.environ["BLACKOUT_CRASH"]) * 10**7
every = int(os.environ["CHECKPOINT_EVERY"])
stamp = float(os.environ.get("LOSS_WINDOW", "0")) > 0
for i in range(10**7):
    k = base + i
    sys.stdout.write("INSERT INTO acked VALUES (%d, %s);\n" % (k, "'"'v%d'"'" % k))
    if stamp:
        sys.stdout.write("SELECT %s || extract(epoch from clock_timestamp());\n" % ("'"'ok %d '"'" % k))
    else:
        sys.stdout.write("\\echo ok %d\n" % k)
    if every and (i + 1) % every == 0:
        sys.stdout.write("\\set ON_ERROR_STOP 0\nCHECKPOINT;\n\\set ON_ERROR_STOP 1\n")
' | as_pg stdbuf -oL "$BIN/psql" -h "$SOCK" -d postgres -X -q -At -v ON_ERROR_STOP=1
    ;;
check)
    psql_ -At -c 'SELECT k FROM acked' > "$SOCK/have"
    python3 -c '
import os, sys
have = set(open(sys.argv[1]).read().split())
acked = [l.split()[1:] for l in open(os.environ["BLACKOUT_ACKS_FILE"]) if l.strip()]
window = float(os.environ.get("LOSS_WINDOW", "0"))
# A commit acknowledged within the window before the last acknowledgement
# of its own run (keys of crash N start at N * 10**7) may be gone.
last = {}
for a in acked:
    if len(a) == 2:
        run = int(a[0]) // 10**7
        last[run] = max(last.get(run, 0.0), float(a[1]))
lost = [a[0] for a in acked if a[0] not in have
        and not (len(a) == 2 and last[int(a[0]) // 10**7] - float(a[1]) < window)]
if lost:
    print("%d acknowledged commits are gone after the crash (first: k=%s; %d of %d acknowledged rows survived)"
          % (len(lost), lost[0], sum(1 for a in acked if a[0] in have), len(acked)))
    sys.exit(1)
' "$SOCK/have"
    if [ "${CHECK_INDEX:-0}" = 1 ]; then
        psql_ -At -c "SELECT bt_index_check('acked_pkey', true)" >/dev/null
    fi
    ;;
*)
    echo "usage: pg.sh setup|serve|ready|load|check" >&2
    exit 2
    ;;
esac
