#!/bin/sh
# admin/status parses (dpkg-query reads the database the way dpkg does,
# applying the journal in admin/updates first) and blackout-hello is not
# there or in some state; once "saved" was printed (dpkg -i had exited
# 0) it is "install ok installed" and its file is in the tree.
s=$(dpkg-query --admindir="$PWD/admin" -W -f '${Status}' blackout-hello 2>&1)
rc=$?
case "$s" in
*"no packages found"*) s=absent ;;
*)
    [ $rc -eq 0 ] || { echo "dpkg-query fails: $(echo "$s" | tail -1)" >&2; exit 1; }
    ;;
esac
case "$BLACKOUT_ACKED" in
*saved*)
    [ "$s" = "install ok installed" ] || { echo "blackout-hello is \"$s\" after dpkg -i returned" >&2; exit 1; }
    [ "$(cat inst/usr/share/blackout-hello/hello.txt 2>/dev/null)" = hello ] ||
        { echo "blackout-hello is installed but its file does not hold hello" >&2; exit 1; }
    ;;
esac
exit 0
