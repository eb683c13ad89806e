#!/bin/sh
# The SQLite workload: one sqlite3 process (one connection, kept open across
# commits) runs COUNT transactions (4 unless given); after each COMMIT
# returns it prints "ack N". Each row carries 2,000 bytes so a transaction
# touches several pages.
#
#   workload.sh JOURNAL_MODE SYNCHRONOUS [COUNT]
set -e
mode=$1
sync=$2
count=${3:-4}
sql="PRAGMA journal_mode=$mode; PRAGMA synchronous=$sync;"
n=0
while [ "$n" -lt "$count" ]; do
    n=$((n + 1))
    sql="$sql BEGIN; INSERT INTO t VALUES($n, printf('%02000d', $n)); COMMIT; SELECT 'ack $n';"
done
# The CLI buffers its output when it is not a terminal: line-buffer it so
# each "ack N" is written when its COMMIT has returned, not at exit.
exec stdbuf -oL sqlite3 db "$sql"
