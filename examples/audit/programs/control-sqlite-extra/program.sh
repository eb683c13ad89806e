# Control: SQLite with a rollback journal and synchronous=EXTRA (the
# journal's deletion made durable before COMMIT returns): must pass
# everywhere.
NAME="control: SQLite synchronous=EXTRA"
ECOSYSTEM=Debian
VERSION=$(dpkg-query -W -f '${Version}' sqlite3 2>/dev/null || sqlite3 --version | cut -d' ' -f1)
ACTION="four transactions, journal_mode=DELETE, synchronous=EXTRA"
SETUP="sqlite3 db 'PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);' >/dev/null"
CHECK="sh $REPO/examples/sqlite/check.sh"
ACK_PREFIX="ack "
VOLATILE="*-shm"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='EXTRA synchronous is like FULL with the addition that the directory containing a rollback journal is synced after that journal is unlinked to commit a transaction in DELETE mode. EXTRA provides additional durability if the commit is followed closely by a power loss.'
PROMISE_LINK='https://www.sqlite.org/pragma.html#pragma_synchronous'
