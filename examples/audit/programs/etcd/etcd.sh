#!/bin/sh
# etcd under `blackout soak`: one member from Debian's package, its data
# directory on the live mount (the working directory), its client and
# peer URLs on loopback (ports ETCD_PORT and ETCD_PORT + 1, default 23790);
# a client that PUTs keys one at a time over etcd's HTTP/JSON gateway and
# prints `ok KEY` once etcd answered, and a checker that reads every key
# back. etcd's defaults otherwise (its write-ahead log fsynced before a
# write is acknowledged).
#
#   blackout soak --setup 'etcd.sh setup' --ready 'etcd.sh ready' --client 'etcd.sh load' \
#     --checker 'etcd.sh check' --ack-prefix ok -- etcd.sh serve
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PORT=${ETCD_PORT:-23790}
URL=http://127.0.0.1:$PORT
case $1 in
setup)
    # A data directory etcd has started in once and stopped cleanly, as
    # on a member that has run before (the directory and its member/wal
    # and member/snap made).
    sh "$0" serve &
    pid=$!
    i=0
    until sh "$0" ready; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "etcd did not start" >&2; exit 1; }
        sleep 0.1
    done
    kill -TERM $pid
    wait $pid || true
    ;;
serve)
    exec etcd --name audit --data-dir "$BLACKOUT_MOUNT/etcd" \
        --listen-client-urls "$URL" --advertise-client-urls "$URL" \
        --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-cluster "audit=http://127.0.0.1:$((PORT + 1))" \
        --log-outputs "$BLACKOUT_SOAK_DIR/etcd.log" --logger zap
    ;;
ready | load | check)
    exec python3 "$here/kv.py" "$1" "$URL"
    ;;
*)
    echo "usage: etcd.sh setup|serve|ready|load|check" >&2
    exit 2
    ;;
esac
