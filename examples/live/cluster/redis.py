#!/usr/bin/env python3
"""A Redis primary and its replica under `blackout soak --node`.

    blackout soak --crashes 20 --seed 1 --ack-prefix ok --faults one \
      --node a='python3 redis.py serve' --node b='python3 redis.py serve' \
      --setup 'python3 redis.py setup' --ready 'python3 redis.py ready' \
      --client 'python3 redis.py load' --checker 'python3 redis.py check'

setup   (per node) picks a free TCP port for the node, kept in its soak
        directory, and makes the append-only directory (`appendonlydir`) on
        the mount, made durable by the soak: Redis 7.0 makes it itself
        without an fsync of the directory holding it, so a power failure
        soon after the first start may lose the directory and every file in
        it (AOF_DIR=redis leaves it to Redis, to see that).
serve   (per node) starts redis-server on the node's mount, the append-only
        file on, `appendfsync` as APPENDFSYNC says (default `no`), no RDB
        snapshots. Its role, the failover rule: a node that starts while
        another node runs rejoins as that node's replica, and if that node is
        itself a replica (of this one, which went down), promotes it first
        (REPLICAOF NO ONE); a node that starts while no other runs is the
        primary. So after one node lost power the survivor holds the data,
        and after all of them did, the first node in start order is the
        primary on what its disk kept.
ready   (per node) PING answers and, on a replica, the link to its primary
        is up (the initial sync done).
load    finds the primary and SETs keys k<crash>.<n>, printing `ok KEY` once
        `WAIT 1 1000` says a replica received the write.
check   finds the primary and reads every acknowledged key back from it.
"""

import os
import socket
import sys
import time

HOST = "127.0.0.1"


def port_of(soak_dir):
    try:
        with open(os.path.join(soak_dir, "port")) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


class Conn:
    """A RESP connection, enough for SET, GET, WAIT, ROLE and INFO."""

    def __init__(self, port, timeout=2.0):
        self.s = socket.create_connection((HOST, port), timeout=timeout)
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()

    def reply(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def close(self):
        self.s.close()


def nodes():
    """(name, port) of every node, in start order."""
    out = []
    for name in os.environ["BLACKOUT_NODES"].split():
        d = os.environ["BLACKOUT_SOAK_DIR_" + name.upper()]
        out.append((name, port_of(d)))
    return out


def role(port):
    """`master`, `slave`, or None when nothing answers."""
    if port is None:
        return None
    try:
        c = Conn(port, timeout=1.0)
        try:
            return c.call("ROLE")[0]
        finally:
            c.close()
    except (OSError, RuntimeError, ConnectionError):
        return None


def primary():
    """(name, port) of the node that is primary, or None."""
    for name, port in nodes():
        if role(port) == "master":
            return name, port
    return None


def setup():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    with open(os.path.join(os.environ["BLACKOUT_SOAK_DIR"], "port"), "w") as f:
        f.write(str(port))
    if os.environ.get("AOF_DIR", "setup") == "setup":
        os.mkdir(os.path.join(os.environ["BLACKOUT_MOUNT"], "appendonlydir"))


def serve():
    me = os.environ["BLACKOUT_NODE"]
    port = port_of(os.environ["BLACKOUT_SOAK_DIR"])
    args = [
        "redis-server",
        "--port", str(port), "--bind", HOST, "--protected-mode", "no",
        "--dir", os.environ["BLACKOUT_MOUNT"], "--daemonize", "no",
        "--appendonly", "yes",
        "--appendfsync", os.environ.get("APPENDFSYNC", "no"),
        "--save", "",
        "--logfile", "",
    ]
    for name, other in nodes():
        if name == me:
            continue
        r = role(other)
        if r is None:
            continue
        if r == "slave":
            # Its primary was this node, which went down: promote it.
            c = Conn(other)
            c.call("REPLICAOF", "NO", "ONE")
            c.close()
            print(f"promoted {name} (its primary {me} went down)", flush=True)
        print(f"{me} starts as a replica of {name}", flush=True)
        args += ["--replicaof", HOST, str(other)]
        break
    else:
        print(f"{me} starts as the primary", flush=True)
    os.execvp(args[0], args)


def ready():
    port = port_of(os.environ["BLACKOUT_SOAK_DIR"])
    c = Conn(port, timeout=1.0)
    try:
        if c.call("PING") != "PONG":
            sys.exit(1)
        info = c.call("INFO", "replication")
        if "role:slave" in info and "master_link_status:up" not in info:
            sys.exit(1)
        if "loading:1" in c.call("INFO", "persistence"):
            sys.exit(1)
    finally:
        c.close()


def load():
    crash = os.environ.get("BLACKOUT_CRASH", "0")
    n = 0
    conn = None
    while True:
        try:
            if conn is None:
                p = primary()
                if p is None:
                    time.sleep(0.05)
                    continue
                conn = Conn(p[1])
            n += 1
            key = f"k{crash}.{n}"
            conn.call("SET", key, key)
            if conn.call("WAIT", 1, 1000) >= 1:
                print(f"ok {key}", flush=True)
        except (OSError, RuntimeError, ConnectionError) as e:
            print(f"load: {e}", file=sys.stderr, flush=True)
            conn = None
            time.sleep(0.05)


def check():
    with open(os.environ["BLACKOUT_ACKS_FILE"]) as f:
        keys = [line.split()[1] for line in f if line.startswith("ok ")]
    p = primary()
    if p is None:
        print("no node is the primary")
        sys.exit(1)
    name, port = p
    c = Conn(port, timeout=10.0)
    gone = []
    for i in range(0, len(keys), 500):
        batch = keys[i : i + 500]
        for k, v in zip(batch, c.call("MGET", *batch)):
            if v != k:
                gone.append(k)
    c.close()
    if gone:
        lost = os.environ.get("BLACKOUT_LOST_POWER", "") or "none"
        print(
            f"{len(gone)} of {len(keys)} acknowledged keys are gone from the "
            f"primary {name} (first: {gone[0]}, last: {gone[-1]}; "
            f"lost power: {lost})"
        )
        sys.exit(1)


if __name__ == "__main__":
    {"setup": setup, "serve": serve, "ready": ready, "load": load, "check": check}[
        sys.argv[1]
    ]()
