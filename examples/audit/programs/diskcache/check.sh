#!/bin/sh
# The cache opens with diskcache and holds k: v1 or v2, and v2 once
# "saved" was printed (a missing key reads as None).
v=$(PYTHONPATH="$AUDIT_LIB" python3 -c '
from diskcache import Cache
c = Cache("cache")
v = c.get("k")
c.close()
print(v)' 2>&1) || {
    echo "the cache does not open: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after set and close returned" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
