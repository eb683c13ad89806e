#!/bin/sh
# The checker for save.sh, run in a crash state's directory: doc.txt must be
# the old document or the new one, and the new one once "saved" was promised.
if [ ! -f doc.txt ]; then
    echo "doc.txt is missing" >&2
    exit 1
fi
if [ ! -s doc.txt ]; then
    echo "doc.txt is empty" >&2
    exit 1
fi
if printf 'version 2\n' | cmp -s - doc.txt; then
    exit 0
fi
if ! printf 'version 1\n' | cmp -s - doc.txt; then
    echo "doc.txt is neither version: $(od -An -c doc.txt | head -n 2 | tr -s ' ' | tr -d '\n')" >&2
    exit 1
fi
if printf '%s\n' "$BLACKOUT_ACKED" | grep -qx saved; then
    echo "\"saved\" was printed, but doc.txt is still version 1" >&2
    exit 1
fi
exit 0
