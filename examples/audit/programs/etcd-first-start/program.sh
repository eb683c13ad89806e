# etcd's first start on an empty data directory: no setup, so the first
# crash comes while etcd has just made its data directory, write-ahead
# log and snapshot directories; one crash per soak, each soak a new empty
# directory (as Debian's /var/lib/etcd/default is made by etcd's first
# start).
same_as etcd
NAME="etcd put, first start"
ACTION="as etcd put, on an empty data directory: etcd's first start, then the power fails under load (1 crash, 3 seeds)"
SOAK_SETUP=
SOAK_CRASHES=1
