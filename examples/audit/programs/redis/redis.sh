#!/bin/sh
# Redis under `blackout soak`: its service, readiness probe, client and
# checker, one subcommand each. Redis runs from Debian's own configuration
# file (/etc/redis/redis.conf) with only what a soak must change given on
# the command line: the data directory is the live mount (the working
# directory), the socket, pid file and log are in $BLACKOUT_SOAK_DIR, no
# TCP port, in the foreground; then the append-only file on, with
# APPENDFSYNC (always, everysec or no) as its fsync policy.
#
# The client SETs keys one at a time and prints `ok KEY` once Redis
# answered +OK (`ok KEY T` with a LOSS_WINDOW: T is the monotonic clock,
# in seconds, when the answer came).
# The checker reads every key back. LOSS_WINDOW=S: a write acknowledged
# less than S seconds before the last acknowledgement the client printed
# in the same run (it is killed just before the power fails) may be gone: what
# the configuration's documentation allows; 0 (the default) allows none.
#
#   blackout soak --setup 'redis.sh setup' --ready 'redis.sh ready' --client 'redis.sh load' \
#     --checker 'redis.sh check' --ack-prefix ok -- redis.sh serve
set -eu
APPENDFSYNC=${APPENDFSYNC:-always}
here=$(cd "$(dirname "$0")" && pwd)
SOCK=$BLACKOUT_SOAK_DIR/redis.sock

case $1 in
setup)
    # A data directory Redis has started in once and shut down cleanly:
    # its append-only directory and manifest made, as on a server that
    # has run before.
    sh "$0" serve &
    i=0
    until sh "$0" ready; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "redis did not start" >&2; exit 1; }
        sleep 0.1
    done
    python3 "$here/resp.py" shutdown "$SOCK"
    wait
    ;;
serve)
    exec redis-server /etc/redis/redis.conf \
        --daemonize no --supervised no --port 0 \
        --unixsocket "$SOCK" --unixsocketperm 700 \
        --pidfile "$BLACKOUT_SOAK_DIR/redis.pid" \
        --logfile "$BLACKOUT_SOAK_DIR/redis.log" \
        --dir "$BLACKOUT_MOUNT" \
        --appendonly yes --appendfsync "$APPENDFSYNC"
    ;;
ready | load | check)
    exec python3 "$here/resp.py" "$1" "$SOCK"
    ;;
*)
    echo "usage: redis.sh setup|serve|ready|load|check" >&2
    exit 2
    ;;
esac
