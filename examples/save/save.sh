#!/bin/sh
# Saves a document (doc.txt, "version 2") and then prints "saved".
#
#   save.sh [full|no-dir-fsync|no-fsync|in-place|extra-fsync]
#
# full (the default) is the careful recipe: write a temporary file, fsync it,
# rename it over the document, fsync the directory. The other modes each drop
# one step, the way real programs do:
#   no-dir-fsync  never fsyncs the directory, so the rename may be lost
#   no-fsync      fsyncs nothing, so the renamed file may be empty
#   in-place      truncates the document and writes it where it is
# and one adds a step no crash needs:
#   extra-fsync   the careful recipe, then an fsync of the renamed document
#                 (its data was synced as the temporary file already)
set -e
mode=${1:-full}
case "$mode" in
full)
    printf 'version 2\n' > doc.txt.tmp
    sync doc.txt.tmp
    mv doc.txt.tmp doc.txt
    sync .
    ;;
no-dir-fsync)
    printf 'version 2\n' > doc.txt.tmp
    sync doc.txt.tmp
    mv doc.txt.tmp doc.txt
    ;;
no-fsync)
    printf 'version 2\n' > doc.txt.tmp
    mv doc.txt.tmp doc.txt
    ;;
in-place)
    printf 'version 2\n' > doc.txt
    ;;
extra-fsync)
    printf 'version 2\n' > doc.txt.tmp
    sync doc.txt.tmp
    mv doc.txt.tmp doc.txt
    sync .
    sync doc.txt
    ;;
*)
    echo "usage: save.sh [full|no-dir-fsync|no-fsync|in-place|extra-fsync]" >&2
    exit 2
    ;;
esac
echo saved
