# Mercurial's hg commit: a second commit in a repository holding one
# (revlogs appended to, the transaction journal, dirstate, the
# changelog's index written last).
NAME="mercurial hg commit"
ECOSYSTEM=Debian
VERSION=$(deb_version mercurial)
ACTION="hg commit -m two -u test after editing a.txt in a repository with one commit"
# Installs the system package when hg is missing (DIR is left empty).
install() { install_deb hg mercurial; }
# HGRCPATH=/dev/null: no system or user configuration (Debian's hgrc.d
# enables extensions); one file committed as "one".
SETUP='HGRCPATH=/dev/null; export HGRCPATH
hg init repo && cd repo && echo one >a.txt && hg add -q a.txt && hg commit -q -m one -u test'
# Nothing is fsynced and each state runs hg verify (half a second): the
# fix (a dozen fsyncs) is verified on its own, with the time that needs.
VERIFY_FIXES=1
FIX_TIME=45m
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://manpages.debian.org/bookworm/mercurial-common/hg.1.en.html'
PROMISE_NOTE='hg(1) (hg commit, hg recover, hg rollback) and hgrc(5) of Mercurial 6.3.2 as Debian ships it, and the helptext/ files: no statement that a commit is synced or survives a power failure; hg recover only speaks of rolling back an interrupted transaction'
