#!/bin/sh
# A cheap checker for the SQLite workload: opening the database runs
# SQLite's recovery (a hot rollback journal is rolled back), then one
# primary-key lookup per acknowledged row. No integrity_check: it reads a
# few pages, not the whole database (examples/sqlite/size.sh).
ids=
for line in $BLACKOUT_ACKED; do
    case "$line" in
    [0-9]*) ids="$ids${ids:+,}$line" ;;
    esac
done
out=$(sqlite3 db "SELECT 'missing:' || ifnull((SELECT group_concat(value) FROM json_each('[$ids]')
                  WHERE value NOT IN (SELECT id FROM t)), '');" 2>&1) || {
    echo "sqlite3 cannot read db: ${out%%
*}" >&2
    exit 1
}
missing=${out##*missing:}
if [ -n "$missing" ]; then
    echo "acknowledged row ${missing%%,*} is missing" >&2
    exit 1
fi
exit 0
