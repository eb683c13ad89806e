#!/bin/sh
# The .env parses and holds KEY: v1 or v2, and v2 once "saved" was printed.
v=$(PYTHONPATH="$AUDIT_LIB" python3 -c '
from dotenv import dotenv_values
print(dotenv_values(".env").get("KEY"))') || exit 1
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "KEY is $v after set_key returned" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "KEY is $v" >&2; exit 1; } ;;
esac
