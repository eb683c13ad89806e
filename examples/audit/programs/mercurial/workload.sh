#!/bin/sh
# Edit the file and commit it; the promise once hg commit exits 0.
# HGRCPATH=/dev/null: no system or user configuration.
HGRCPATH=/dev/null
export HGRCPATH
cd repo || exit 1
echo two >a.txt
hg commit -q -m two -u test || exit 1
echo saved
