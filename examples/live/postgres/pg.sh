#!/bin/sh
# PostgreSQL under `blackout soak`: its setup, service, readiness probe,
# client and checker, one subcommand each. The data directory is pg/ on the
# live mount (the working directory); the socket is in $BLACKOUT_SOAK_DIR.
# SYNC is synchronous_commit: `on` (a commit is acknowledged once its WAL
# is flushed) or `off` (acknowledged at once; the WAL is flushed within
# three wal_writer_delay periods).
#
#   blackout soak --setup "pg.sh setup" --ready "pg.sh ready" \
#     --client "pg.sh load" --checker "pg.sh check" --ack-prefix ok -- pg.sh serve
set -eu
SYNC=${SYNC:-on}
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
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -s stop
    ;;
serve)
    # No server runs after a crash: what it left of its lock files is
    # stale (as an init script treats them).
    rm -f "$DATA/postmaster.pid" "$SOCK/.s.PGSQL.5432" "$SOCK/.s.PGSQL.5432.lock"
    exec runuser -u postgres -- "$BIN/postgres" -D "$DATA" -k "$SOCK" \
        -c listen_addresses= -c synchronous_commit="$SYNC" -c fsync=on
    ;;
ready)
    as_pg "$BIN/pg_isready" -h "$SOCK" -q
    ;;
load)
    # One transaction per row; `ok K` once its COMMIT returned.
    python3 -c '
import os, sys
base = int(os.environ["BLACKOUT_CRASH"]) * 10**7
for i in range(10**7):
    k = base + i
    sys.stdout.write("INSERT INTO acked VALUES (%d, %s);\n\\echo ok %d\n" % (k, "'"'v%d'"'" % k, k))
' | as_pg stdbuf -oL "$BIN/psql" -h "$SOCK" -d postgres -X -q -v ON_ERROR_STOP=1
    ;;
check)
    psql_ -At -c 'SELECT k FROM acked' > "$SOCK/have"
    python3 -c '
import os, sys
have = set(open(sys.argv[1]).read().split())
acked = [l.split()[1] for l in open(os.environ["BLACKOUT_ACKS_FILE"]) if l.strip()]
lost = [k for k in acked if k not in have]
if lost:
    print("%d acknowledged commits are gone after the crash (first: k=%s; %d of %d acknowledged rows survived)"
          % (len(lost), lost[0], len(acked) - len(lost), len(acked)))
    sys.exit(1)
' "$SOCK/have"
    ;;
*)
    echo "usage: pg.sh setup|serve|ready|load|check" >&2
    exit 2
    ;;
esac
