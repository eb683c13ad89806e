#!/bin/sh
# One edit and :wq in ex mode: no vimrc (-u NONE), no viminfo (-i NONE),
# no swap file (-n); HOME is the directory under test so anything vim
# might put under ~ stays in it. The promise once vim exits 0.
#
# 'backupskip' is emptied: its default skips the backup for files under
# /tmp and $TMPDIR, which is where blackout puts the directory under
# test; a user's file elsewhere gets vim's default backup (writebackup:
# notes.txt~ made before the write, removed after it), so this restores
# what users get rather than turning anything off.
HOME=$PWD vim -u NONE -i NONE -n -es -c 'set backupskip=' \
    -c '%s/version 1/version 2/' -c 'wq' notes.txt || exit 1
echo saved
