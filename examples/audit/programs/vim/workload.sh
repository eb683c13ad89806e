#!/bin/sh
# One edit and :wq, vim started as its users start it: the system's
# startup files (Debian's /etc/vim/vimrc, then defaults.vim, as there is
# no user vimrc), so 'nocompatible' and with it 'backupcopy=auto' (the
# file renamed to its backup and a new one written), 'writebackup', a
# swap file and a viminfo file. HOME is the directory under test, so
# the viminfo file vim writes under ~ stays in it. --not-a-term: input
# and output are not a terminal here, which vim would otherwise warn
# about and wait two seconds. The promise once vim exits 0.
#
# 'backupskip' is emptied: its default skips the backup for files under
# /tmp and $TMPDIR, which is where blackout puts the directory under
# test; a user's file elsewhere gets vim's default backup (writebackup:
# notes.txt renamed to notes.txt~ before the write, removed after it),
# so this restores what users get rather than turning anything off.
HOME=$PWD vim --not-a-term -c 'set backupskip=' \
    -c '%s/version 1/version 2/' -c 'wq' notes.txt </dev/null >/dev/null || exit 1
echo saved
