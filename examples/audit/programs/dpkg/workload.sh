#!/bin/sh
# Install the package; the promise once dpkg exits 0. Everything dpkg
# writes stays in the directory under test: --log (its default is
# /var/log/dpkg.log, from /etc/dpkg/dpkg.cfg), --admindir, --instdir;
# --force-not-root and --force-script-chrootless so it runs unprivileged
# and without chroot, --no-triggers to leave the system's triggers alone.
dpkg --admindir="$PWD/admin" --instdir="$PWD/inst" --log="$PWD/dpkg.log" \
    --force-not-root --force-script-chrootless --no-triggers \
    -i pkg.deb >/dev/null || exit 1
echo saved
