#!/bin/sh
# config.json parses and holds v: 1 or 2, and 2 once "saved" was printed.
v=$(python3 -c '
import json
print(json.load(open("config.json")).get("v"))' 2>&1) || {
    echo "config.json does not parse: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = 2 ] || { echo "v is $v after the save returned" >&2; exit 1; } ;;
*) [ "$v" = 1 ] || [ "$v" = 2 ] || { echo "v is $v" >&2; exit 1; } ;;
esac
