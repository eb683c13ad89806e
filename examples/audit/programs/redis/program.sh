# Redis's append-only file, fsync policy `always`, on a data directory
# Redis has started in before: redis-server from Debian's own
# configuration file with only the data directory, socket, pid file and
# log moved and the append-only file turned on (redis.sh serve); a client
# SETs keys one at a time over the Unix socket and prints `ok KEY T` once
# Redis answered; soaked on the live file system: SOAK_CRASHES power
# failures under the client's load, Redis restarted on what each left,
# every acknowledged key read back.
NAME="Redis appendfsync always"
ECOSYSTEM=Debian
VERSION=$(deb_version redis-server)
ACTION="SETs one at a time, each acknowledged once Redis answered +OK; 20 power failures under load, 3 seeds, on a data directory Redis ran in before"
CONFIG="/etc/redis/redis.conf, then appendonly yes, appendfsync always"
install() { install_deb redis-server redis-server; }
redis="sh $REPO/examples/audit/programs/redis/redis.sh"
SERVICE="$redis serve"
SOAK_SETUP="$redis setup"
READY="$redis ready"
CLIENT="$redis load"
CHECK="$redis check"
ACK_PREFIX=ok
SOAK_ENV="APPENDFSYNC=always"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='always: fsync after every write to the append only log. Slow, Safest.'
PROMISE_LINK='https://github.com/redis/redis/blob/7.0.15/redis.conf'
