# PostgreSQL from Debian's packages, synchronous_commit on (its default):
# examples/live/postgres/pg.sh's service (a cluster made by initdb on the
# live mount, one table), a client committing one row per transaction
# and printing `ok K` once COMMIT returned, a checker reading every
# acknowledged row back; soaked on the live file system.
NAME="PostgreSQL synchronous_commit on"
ECOSYSTEM=Debian
VERSION=$(deb_version postgresql-15)
ACTION="one INSERT per transaction, each acknowledged once its COMMIT returned; 20 power failures under load, 3 seeds"
CONFIG="initdb's postgresql.conf, socket in the soak's directory, no TCP, fsync on, synchronous_commit on"
install() { install_deb pg_ctlcluster postgresql; }
pg="sh $REPO/examples/live/postgres/pg.sh"
SERVICE="$pg serve"
SOAK_SETUP="$pg setup"
READY="$pg ready"
CLIENT="$pg load"
CHECK="$pg check"
ACK_PREFIX=ok
SOAK_ENV="SYNC=on"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='synchronous_commit … The local behavior of all non-off modes is to wait for local flush of WAL to disk.'
PROMISE_LINK='https://www.postgresql.org/docs/15/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT'
