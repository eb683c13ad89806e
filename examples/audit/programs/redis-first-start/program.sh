# Redis's first start on an empty data directory, fsync policy `always`,
# recorded as a program (workload.sh): the server started, 20 SETs each
# acknowledged, the server killed; each crash state's checker restarts
# Redis on it (check.sh). A recorded run, unlike the soaks of the other
# Redis rows, explores every crash point of the first start, runs on
# ext4, xfs and btrfs, and verifies the fix.
NAME="Redis appendfsync always, first start"
ECOSYSTEM=Debian
VERSION=$(deb_version redis-server)
ACTION="redis-server started on an empty data directory, 20 SETs one at a time, each acknowledged once Redis answered +OK, then the server killed"
CONFIG="/etc/redis/redis.conf, then appendonly yes, appendfsync always"
install() { install_deb redis-server redis-server; }
ACK_PREFIX=ok
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='always: fsync after every write to the append only log. Slow, Safest.'
PROMISE_LINK='https://github.com/redis/redis/blob/7.0.15/redis.conf'
