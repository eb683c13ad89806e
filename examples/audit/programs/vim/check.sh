#!/bin/sh
# notes.txt holds "version 2" once "saved" was printed (vim had exited 0
# after :wq). Before that, the text must be recoverable the way vim
# keeps it while it writes: notes.txt holds "version 1" or "version 2",
# or, while notes.txt is missing or half written, the backup notes.txt~
# holds "version 1" ('writebackup': vim keeps the backup until the new
# file is written, so that a failed write leaves the old text there).
# The reason says what both files hold.
v=missing
[ -f notes.txt ] && v="\"$(cat notes.txt)\""
bak="no notes.txt~"
[ -f notes.txt~ ] && bak="notes.txt~ holds \"$(cat notes.txt~)\""
case "$BLACKOUT_ACKED" in
*saved*)
    [ "$v" = '"version 2"' ] || { echo "notes.txt is $v after :wq returned ($bak)" >&2; exit 1; }
    ;;
*)
    [ "$v" = '"version 1"' ] || [ "$v" = '"version 2"' ] ||
        [ "$bak" = 'notes.txt~ holds "version 1"' ] ||
        { echo "notes.txt is $v and $bak: the text is in neither" >&2; exit 1; }
    ;;
esac
exit 0
