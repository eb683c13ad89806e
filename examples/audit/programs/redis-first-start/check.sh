#!/bin/sh
# Redis restarted on the crash state (the working directory) as it was
# run, and every key printed as `ok KEY` read back; the server is shut
# down without saving.
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
    kill -0 $pid 2>/dev/null || { echo "redis does not start: $(tail -1 "$run/redis.log")" >&2; exit 1; }
    [ $i -lt 100 ] || { echo "redis did not become ready" >&2; exit 1; }
    sleep 0.05
done
python3 "$resp" check "$run/redis.sock"
