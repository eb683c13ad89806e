#!/bin/sh
# The checker for the SQLite workload, run in a crash state's directory.
# Opening the database with the sqlite3 CLI runs SQLite's own recovery (a
# hot rollback journal is rolled back, a WAL is recovered). The database must
# pass PRAGMA integrity_check, and every row acknowledged ("ack N") must be
# there. One sqlite3 process and shell builtins only: it runs once per state.
ids=
for line in $BLACKOUT_ACKED; do
    case "$line" in
    [0-9]*) ids="$ids${ids:+,}$line" ;;
    esac
done
out=$(sqlite3 db "PRAGMA integrity_check;
SELECT 'missing:' || ifnull((SELECT group_concat(value) FROM json_each('[$ids]')
                             WHERE value NOT IN (SELECT id FROM t)), '');" 2>&1) || {
    echo "sqlite3 cannot read db: ${out%%
*}" >&2
    exit 1
}
first=${out%%
*}
if [ "$first" != ok ]; then
    echo "integrity_check: $first" >&2
    exit 1
fi
missing=${out##*missing:}
if [ -n "$missing" ]; then
    echo "acknowledged row ${missing%%,*} is missing" >&2
    exit 1
fi
exit 0
