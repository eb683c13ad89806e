#!/bin/sh
# Saves a document the careful way: write a temporary file, fsync it, rename
# it over the document, fsync the directory, then say "saved".
set -e
printf 'version 2\n' > doc.txt.tmp
sync doc.txt.tmp
mv doc.txt.tmp doc.txt
sync .
echo saved
