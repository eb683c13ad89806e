# dpkg -i of a tiny package into a database and an install tree of its
# own (--admindir, --instdir): the status file is rewritten through
# status-new renamed over it, with journal entries under updates/.
NAME="dpkg -i --admindir"
ECOSYSTEM=Debian
VERSION=$(deb_version dpkg)
ACTION="dpkg -i of a one-file package (pkg/ in this directory) into ./admin (empty status) and ./inst"
# dpkg is part of every Debian system; installs it when missing (DIR is
# left empty).
install() { install_deb dpkg dpkg; }
# The package, built from the control file and tree kept in pkg/, and an
# empty database: status and available empty, updates/ and info/ made.
SETUP='cp -R "$REPO/examples/audit/programs/dpkg/pkg" pkgsrc
dpkg-deb --root-owner-group -b pkgsrc pkg.deb >/dev/null
rm -rf pkgsrc
mkdir -p admin/updates admin/info inst
: >admin/status
: >admin/available'
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='unsafe-io: Do not perform safe I/O operations when unpacking (since dpkg 1.15.8.6). Currently this implies not performing file system syncs before file renames, … the ones that require the safe I/O on the first place due to their unreliable behaviour causing zero-length files on abrupt system crashes.'
PROMISE_LINK='https://manpages.debian.org/bookworm/dpkg/dpkg.1.en.html'
