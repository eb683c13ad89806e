#!/bin/sh
# The SQLite checker (check.sh) as a checker server in shell: one sqlite3
# process per request, no shell started per state. The request is JSON; the
# scratch paths blackout writes hold no quote or backslash, so "dir" is cut
# out with parameter expansion, and the promised row ids are the numbers in
# "acked".
while IFS= read -r request; do
    dir=${request#*\"dir\":\"}
    dir=${dir%%\"*}
    acked=${request#*\"acked\":\[}
    acked=${acked%%\]*}
    ids=
    for word in $(printf '%s' "$acked" | tr -c '0-9' ' '); do
        ids="$ids${ids:+,}$word"
    done
    out=$(sqlite3 "$dir/db" "PRAGMA integrity_check;
SELECT 'missing:' || ifnull((SELECT group_concat(value) FROM json_each('[$ids]')
                             WHERE value NOT IN (SELECT id FROM t)), '');" 2>&1) || {
        echo "fail sqlite3 cannot read db: ${out%%
*}"
        continue
    }
    first=${out%%
*}
    missing=${out##*missing:}
    if [ "$first" != ok ]; then
        echo "fail integrity_check: $first"
    elif [ -n "$missing" ]; then
        echo "fail acknowledged row ${missing%%,*} is missing"
    else
        echo ok
    fi
done
