#!/bin/sh
# The repository after hg's own recovery (hg recover rolls back an
# interrupted transaction; hg asks for it before any write when the
# journal is there): hg verify is clean and hg log lists "one", or "two"
# on top of "one"; "two" once "saved" was printed (hg commit had exited
# 0).
HGRCPATH=/dev/null HGUSER=test
export HGRCPATH HGUSER
cd repo || { echo "repo is missing" >&2; exit 1; }
if [ -e .hg/store/journal ]; then
    out=$(hg recover 2>&1) || { echo "hg recover fails: $(echo "$out" | tail -1)" >&2; exit 1; }
fi
out=$(hg verify -q 2>&1) || { echo "hg verify fails: $(echo "$out" | head -1)" >&2; exit 1; }
log=$(hg log -T '{desc} ' 2>&1) || { echo "hg log fails: $(echo "$log" | head -1)" >&2; exit 1; }
case "$log" in
"two one ") ;;
"one ") case "$BLACKOUT_ACKED" in
    *saved*) echo "the log holds only \"one\" after hg commit returned" >&2; exit 1 ;;
    esac ;;
*) echo "the log is \"$log\"" >&2; exit 1 ;;
esac
