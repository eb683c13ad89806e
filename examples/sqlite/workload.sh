#!/bin/sh
# The SQLite workload: one sqlite3 process (one connection, kept open across
# commits) runs six transactions; after each COMMIT returns it prints
# "ack N". Each row carries 2,000 bytes so a transaction touches several
# pages.
#
#   workload.sh JOURNAL_MODE SYNCHRONOUS
set -e
mode=$1
sync=$2
sql="PRAGMA journal_mode=$mode; PRAGMA synchronous=$sync;"
for n in 1 2 3 4 5 6; do
    sql="$sql BEGIN; INSERT INTO t VALUES($n, printf('%02000d', $n)); COMMIT; SELECT 'ack $n';"
done
# The CLI buffers its output when it is not a terminal: line-buffer it so
# each "ack N" is written when its COMMIT has returned, not at exit.
exec stdbuf -oL sqlite3 db "$sql"
