#!/bin/sh
# The checker for save.sh as a checker server in shell (`blackout run
# --checker-server "sh $PWD/examples/save/check-server.sh"`): one request
# line per crash state on stdin, one answer line on stdout. The request is
# JSON; the scratch paths blackout writes hold no quote or backslash, so the
# "dir" field is cut out with parameter expansion.
while IFS= read -r request; do
    dir=${request#*\"dir\":\"}
    dir=${dir%%\"*}
    case $request in
    *'"acked":['*'"saved"'*) saved=1 ;;
    *) saved= ;;
    esac
    if [ ! -f "$dir/doc.txt" ]; then
        echo "fail doc.txt is missing"
    elif [ ! -s "$dir/doc.txt" ]; then
        echo "fail doc.txt is empty"
    elif printf 'version 2\n' | cmp -s - "$dir/doc.txt"; then
        echo ok
    elif ! printf 'version 1\n' | cmp -s - "$dir/doc.txt"; then
        echo "fail doc.txt is neither version"
    elif [ -n "$saved" ]; then
        echo 'fail "saved" was printed, but doc.txt is still version 1'
    else
        echo ok
    fi
done
