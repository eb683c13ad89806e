#!/bin/sh
# Add alice to the tree; the promise once useradd exits 0.
#
# --prefix, not --root: --root chroots into the tree, and blackout does
# not model chroot (the recording is refused: "openat: open of
# `/etc/.pwd.lock` succeeded, but the model of the directory under test
# has no such path"). --prefix writes the same files through the same
# code (commonio: NAME.PID linked to NAME.lock, NAME- and NAME+ written
# and fsynced, NAME+ renamed over NAME) without the chroot.
useradd --prefix "$PWD/root" alice || exit 1
echo saved
