#!/bin/sh
# Redis's first start on an empty data directory (the directory under
# test), recorded as a program: redis-server from Debian's configuration
# with the append-only file on (appendfsync always), its socket, pid file
# and log in a directory of their own outside the directory under test; a
# client SETs 20 keys one at a time and prints `ok KEY` once Redis
# answered +OK; then the server is killed (the power fails after the
# last promise at the latest).
set -eu
run=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null || true; rm -rf "$run"' EXIT
redis-server /etc/redis/redis.conf --daemonize no --supervised no --port 0 \
    --unixsocket "$run/redis.sock" --unixsocketperm 700 --pidfile "$run/redis.pid" \
    --logfile "$run/redis.log" --dir "$PWD" \
    --appendonly yes --appendfsync always &
pid=$!
resp=$REPO/examples/audit/programs/redis/resp.py
i=0
until python3 "$resp" ready "$run/redis.sock"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "redis did not start" >&2; exit 1; }
    sleep 0.1
done
SET_COUNT=20 python3 "$resp" load "$run/redis.sock"
