#!/bin/sh
# notes.txt holds exactly "version 1" or "version 2", and "version 2"
# once "saved" was printed (vim had exited 0 after :wq). Vim reopens
# notes.txt, not its backup: a state where only notes.txt~ holds the
# text is rejected (the reason says what the backup holds).
[ -f notes.txt ] || { echo "notes.txt is missing" >&2; exit 1; }
v=$(cat notes.txt)
bak="no notes.txt~"
[ -f notes.txt~ ] && bak="notes.txt~ holds \"$(cat notes.txt~)\""
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = "version 2" ] || { echo "notes.txt holds \"$v\" after :wq returned ($bak)" >&2; exit 1; } ;;
*) [ "$v" = "version 1" ] || [ "$v" = "version 2" ] || { echo "notes.txt holds \"$v\" ($bak)" >&2; exit 1; } ;;
esac
