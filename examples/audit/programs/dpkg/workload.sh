#!/bin/sh
# Install the package; the promise once dpkg exits 0. Everything dpkg
# writes stays in the directory under test: --log (its default is
# /var/log/dpkg.log, from /etc/dpkg/dpkg.cfg), --admindir, --instdir;
# --force-not-root and --force-script-chrootless so it runs unprivileged
# and without chroot, --no-triggers to leave the system's triggers alone.
# --refuse-unsafe-io: dpkg as Debian ships it. Container images add
# force-unsafe-io to dpkg's configuration directory (which skips the
# fsync of each unpacked file before its rename); the command line comes
# after the configuration files and turns it back off.
dpkg --admindir="$PWD/admin" --instdir="$PWD/inst" --log="$PWD/dpkg.log" \
    --force-not-root --force-script-chrootless --no-triggers --refuse-unsafe-io \
    -i pkg.deb >/dev/null || exit 1
echo saved
