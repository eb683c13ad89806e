#!/bin/sh
# db.redb opens (redb repairs it as on a restart) and holds k: v1 or v2,
# and v2 once "saved" was printed.
v=$("$AUDIT_LIB/target/release/redb-audit" read 2>&1) || {
    echo "db.redb does not open: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after commit returned" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
