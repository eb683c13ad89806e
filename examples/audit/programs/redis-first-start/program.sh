# Redis's first start on an empty data directory, fsync policy `always`:
# no setup, so the first crash comes while Redis has just made its
# append-only directory and files; one crash per soak, each soak a new
# empty directory.
same_as redis
NAME="Redis appendfsync always, first start"
ACTION="as Redis appendfsync always, on an empty data directory: Redis's first start, then the power fails under load (1 crash, 3 seeds)"
SOAK_SETUP=
SOAK_CRASHES=1
