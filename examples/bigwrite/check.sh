#!/bin/sh
# The checker for bigwrite.py and farbyte.py: once "saved" was promised, the
# file must be whole (its size and its last byte), else anything goes.
# Usage: blackout run --checker "sh $PWD/examples/bigwrite/check.sh FILE SIZE LAST"
# (LAST: the last byte as octal, as od prints it).
file=$1 size=$2 last=$3
case "$BLACKOUT_ACKED" in *saved*) ;; *) exit 0 ;; esac
[ -f "$file" ] || { echo "$file is missing"; exit 1; }
got=$(stat -c %s "$file")
[ "$got" = "$size" ] || { echo "$file holds $got bytes, not $size"; exit 1; }
byte=$(tail -c 1 "$file" | od -An -to1 | tr -d ' ')
[ "$byte" = "$last" ] || { echo "$file ends in $byte, not $last"; exit 1; }
