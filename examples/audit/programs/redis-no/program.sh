# Redis's append-only file without fsync (`appendfsync no`): documented
# to leave the flushing to the operating system.
same_as redis
NAME="Redis appendfsync no"
ACTION="as Redis appendfsync always, every acknowledged write required"
CONFIG="/etc/redis/redis.conf, then appendonly yes, appendfsync no"
SOAK_ENV="APPENDFSYNC=no"
# What the program promises, in its own documentation at this release.
PROMISE=os
PROMISE_QUOTE='no: don'\''t fsync, just let the OS flush the data when it wants. Faster.'
PROMISE_LINK='https://github.com/redis/redis/blob/7.0.15/redis.conf'
