# Redis's default fsync policy for the append-only file, `everysec`: the
# checker allows what the documentation allows, the writes acknowledged
# within the last second before the power failed (redis.sh's
# LOSS_WINDOW).
same_as redis
NAME="Redis appendfsync everysec"
ACTION="as Redis appendfsync always; the writes acknowledged within 1 s of the power failure may be lost"
CONFIG="/etc/redis/redis.conf, then appendonly yes (appendfsync everysec, the configuration's default)"
SOAK_ENV="APPENDFSYNC=everysec LOSS_WINDOW=1"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='using the default data fsync policy (see later in the config file) Redis can lose just one second of writes in a dramatic event like a server power outage'
PROMISE_LINK='https://github.com/redis/redis/blob/7.0.15/redis.conf'
