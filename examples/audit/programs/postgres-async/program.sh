# PostgreSQL with synchronous_commit off: the checker allows what the
# documentation allows, the commits acknowledged within three
# wal_writer_delay (3 × 200 ms) before the power failed.
same_as postgres
NAME="PostgreSQL synchronous_commit off"
ACTION="as PostgreSQL synchronous_commit on; the commits acknowledged within 0.6 s of the power failure may be lost"
CONFIG="initdb's postgresql.conf, socket in the soak's directory, no TCP, fsync on, synchronous_commit off (wal_writer_delay 200 ms, its default)"
SOAK_ENV="SYNC=off LOSS_WINDOW=0.6"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='In off mode, there is no waiting, so there can be a delay between when success is reported to the client and when the transaction is later guaranteed to be safe against a server crash. (The maximum delay is three times wal_writer_delay.)'
PROMISE_LINK='https://www.postgresql.org/docs/15/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT'
