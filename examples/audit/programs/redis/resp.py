"""Redis's readiness probe, client and checker for redis.sh, speaking
RESP over the server's Unix socket.

  resp.py ready SOCK    exit 0 once the server answers PING with PONG
  resp.py load SOCK     SET k<crash>-<n> v<n> for n = 0, 1, ... (SET_COUNT
                        of them if set, else until killed); after each
                        +OK print `ok KEY`, or `ok KEY T` with a
                        LOSS_WINDOW (T: the monotonic clock)
  resp.py shutdown SOCK  SHUTDOWN (the server saves and exits)
  resp.py check SOCK    every key of $BLACKOUT_ACKS_FILE holds its value,
                        but those acknowledged within $LOSS_WINDOW
                        seconds of the last acknowledgement of their
                        client's run (the run before their crash)
"""
import os
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s, s.makefile("rb")


def command(s, f, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    return reply(f)


def reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("the server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b":"):
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode()
    if kind == b"*":
        return [reply(f) for _ in range(int(rest))]
    raise RuntimeError("unexpected reply %r" % line)


def ready(path):
    try:
        s, f = connect(path)
        sys.exit(0 if command(s, f, "PING") == "PONG" else 1)
    except (OSError, RuntimeError, ConnectionError):
        sys.exit(1)


def shutdown(path):
    s, f = connect(path)
    try:
        command(s, f, "SHUTDOWN")
    except ConnectionError:
        pass


def load(path):
    s, f = connect(path)
    crash = os.environ.get("BLACKOUT_CRASH", "0")
    count = int(os.environ.get("SET_COUNT", "0"))
    stamp = float(os.environ.get("LOSS_WINDOW", "0")) > 0
    n = 0
    while not count or n < count:
        key = "k%s-%d" % (crash, n)
        if command(s, f, "SET", key, "v%d" % n) != "OK":
            sys.exit("SET %s was not acknowledged" % key)
        if stamp:
            sys.stdout.write("ok %s %.6f\n" % (key, time.monotonic()))
        else:
            sys.stdout.write("ok %s\n" % key)
        sys.stdout.flush()
        n += 1


def check(path):
    window = float(os.environ.get("LOSS_WINDOW", "0"))
    acks = []
    with open(os.environ["BLACKOUT_ACKS_FILE"]) as acked:
        for line in acked:
            parts = line.split()
            if len(parts) in (2, 3) and parts[0] == "ok":
                acks.append((parts[1], float(parts[2]) if len(parts) == 3 else 0.0))
    if not acks:
        return
    # Each run of the client ended just before its crash: a write may be
    # lost within the window before the last acknowledgement of its own
    # run (a write lost at an earlier crash, within that run's window,
    # stays lost).
    last = {}
    for key, t in acks:
        run = key.split("-")[0]
        last[run] = max(last.get(run, t), t)
    s, f = connect(path)
    lost, allowed = [], 0
    for i in range(0, len(acks), 1000):
        batch = acks[i:i + 1000]
        values = command(s, f, "MGET", *[k for k, _ in batch])
        for (key, t), value in zip(batch, values):
            if value == "v" + key.rsplit("-", 1)[1]:
                continue
            ago = last[key.split("-")[0]] - t
            if ago < window:
                allowed += 1
            else:
                lost.append((key, ago))
    if lost:
        key, ago = lost[0]
        sys.exit("%d acknowledged SETs are gone after the crash (first: %s, acknowledged %.2f s "
                 "before its run's last acknowledgement; %d of %d survived%s)"
                 % (len(lost), key, ago, len(acks) - len(lost) - allowed, len(acks),
                    ", %d lost within the %g s allowed" % (allowed, window) if allowed else ""))

if __name__ == "__main__":
    {"ready": ready, "load": load, "check": check, "shutdown": shutdown}[sys.argv[1]](sys.argv[2])
