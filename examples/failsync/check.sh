#!/bin/sh
# The checker for save.py, run in a crash state's directory: once "saved"
# was printed, data.txt must hold the record.
case "$BLACKOUT_ACKED" in
*saved*) ;;
*) exit 0 ;;
esac
if [ "$(cat data.txt 2>/dev/null)" != "record 1" ]; then
    echo "\"saved\" was printed, but data.txt does not hold the record" >&2
    exit 1
fi
