#!/usr/bin/env python3
"""A small log-structured key-value server, its client and its checker, for
`blackout soak` on a live mount.

  kvlog.py serve [--fsync [--retry]]
                             serve on $BLACKOUT_SOAK_DIR/kv.sock, appending
                             each put to data.log in the working directory
                             (with --fsync: the log and, once, the directory
                             are fsynced before a put is acknowledged; a
                             failed fdatasync stops the server, the put
                             unacknowledged; with --retry it is retried
                             until it returns 0, and the put acknowledged)
  kvlog.py load              put keys 0, 1, 2, ... printing `ok KEY VALUE`
                             for each acknowledged put (each value
                             $KV_VALUE_BYTES long if set: records that
                             cross page boundaries)
  kvlog.py check             read data.log back: every promise in
                             $BLACKOUT_ACKS_FILE must be there
  kvlog.py ready             exit 0 once the server answers
"""
import os
import socket
import sys

SOCK = os.path.join(os.environ.get("BLACKOUT_SOAK_DIR", "."), "kv.sock")
LOG = "data.log"


def records():
    """The log's complete records (a torn last line is dropped)."""
    try:
        data = open(LOG, "rb").read()
    except FileNotFoundError:
        return {}
    out = {}
    for line in data.split(b"\n")[:-1]:
        parts = line.decode(errors="replace").split(" ")
        if len(parts) == 3 and parts[0] == "put":
            out[parts[1]] = parts[2]
    return out


def cut_torn_tail():
    """Recovery: a crash can leave the last record torn (part of it, or
    only the file's new size, reading as zeros). Cut the log back to its
    last complete record, so the next append starts a line of its own."""
    try:
        data = open(LOG, "rb").read()
    except FileNotFoundError:
        return
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(LOG, "r+b") as f:
            f.truncate(end)
            os.fsync(f.fileno())


def fdatasync_retrying(fd):
    """The mistake: after a failed writeback the kernel forgets the pages,
    so the retry returns 0 with the record never written."""
    while True:
        try:
            os.fdatasync(fd)
            return
        except OSError as e:
            print("fdatasync failed (%s); retrying" % e, file=sys.stderr, flush=True)


def serve(durable, retry):
    cut_torn_tail()
    known = records()  # what survived
    fd = os.open(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    if durable:
        os.fsync(fd)
        dfd = os.open(".", os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    try:
        os.unlink(SOCK)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(SOCK)
    srv.listen(8)
    while True:
        conn, _ = srv.accept()
        with conn, conn.makefile("rwb") as f:
            for line in f:
                words = line.decode().split()
                if words[:1] == ["ping"]:
                    f.write(b"pong\n")
                elif words[:1] == ["put"] and len(words) == 3:
                    os.write(fd, ("put %s %s\n" % (words[1], words[2])).encode())
                    if durable and retry:
                        fdatasync_retrying(fd)
                    elif durable:
                        os.fdatasync(fd)
                    known[words[1]] = words[2]
                    f.write(b"ok\n")
                f.flush()


def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(SOCK)
    return s, s.makefile("rwb")


def load():
    _, f = connect()
    crash = os.environ.get("BLACKOUT_CRASH", "0")
    size = int(os.environ.get("KV_VALUE_BYTES", "0"))
    i = 0
    while True:
        key, value = "k%s.%d" % (crash, i), "v%d" % i
        value += "x" * (size - len(value))
        f.write(("put %s %s\n" % (key, value)).encode())
        f.flush()
        if f.readline().strip() != b"ok":
            return
        print("ok %s %s" % (key, value), flush=True)
        i += 1


def check():
    have = records()
    for line in open(os.environ["BLACKOUT_ACKS_FILE"]):
        _, key, value = line.split()
        if have.get(key) != value:
            shown = value if len(value) <= 16 else "%s... (%d bytes)" % (value[:8], len(value))
            print("acknowledged put %s=%s is gone after the crash (%d records survived)"
                  % (key, shown, len(have)))
            sys.exit(1)


def ready():
    _, f = connect()
    f.write(b"ping\n")
    f.flush()
    sys.exit(0 if f.readline() == b"pong\n" else 1)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve("--fsync" in sys.argv, "--retry" in sys.argv)
    elif cmd == "load":
        load()
    elif cmd == "check":
        check()
    elif cmd == "ready":
        try:
            ready()
        except OSError:
            sys.exit(1)
