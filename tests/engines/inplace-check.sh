#!/bin/sh
# The checker of inplace.py in shell, for speed (no interpreter to start per
# state): doc.txt must equal REFS/v1 or REFS/v2 (written by
# `inplace.py refs REFS`), and REFS/v2 once "saved" was printed.
#
#   inplace-check.sh REFS
refs=$1
[ -f doc.txt ] || { echo "doc.txt is missing" >&2; exit 1; }
cmp -s doc.txt "$refs/v2" && exit 0
if printf '%s\n' "$BLACKOUT_ACKED" | grep -qx saved; then
    echo "doc.txt is not the new version after saved ($(wc -c < doc.txt) bytes)" >&2
    exit 1
fi
cmp -s doc.txt "$refs/v1" && exit 0
echo "doc.txt is neither the old nor the new version ($(wc -c < doc.txt) bytes)" >&2
exit 1
