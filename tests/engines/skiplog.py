#!/usr/bin/env python3
"""An append log that syncs each record before acknowledging it, but one.

    skiplog.py write N SKIP
    skiplog.py check
    skiplog.py serve

`write` creates `log` (its directory is never synced), then appends N
checksummed records, each followed by `fdatasync` and `ack I`, except
record SKIP, which is acknowledged before any sync (the next record's
sync covers it). Recovery (`check`) reads records in order and drops a
bad record at the end (a torn tail, never acknowledged); every record
acknowledged must be there. The two syncs that fix it: the log's after
record SKIP is written, and the directory's after the log is created.
`serve` is the same check as a checker server.
"""
import json
import os
import struct
import sys
import zlib


def record(i):
    payload = f"record {i} ".encode() * 3
    return struct.pack("<III", i, len(payload), zlib.crc32(payload)) + payload


def write(n, skip):
    fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i in range(n):
        os.write(fd, record(i))
        if i != skip:
            os.fdatasync(fd)
        print(f"ack {i}", flush=True)
    os.close(fd)


def reject(directory, promises):
    """Why the log in `directory` breaks the promises, or None."""
    try:
        raw = open(os.path.join(directory, "log"), "rb").read()
    except FileNotFoundError:
        raw = None
    good, pos = set(), 0
    while raw is not None and pos + 12 <= len(raw):
        i, length, crc = struct.unpack("<III", raw[pos:pos + 12])
        payload = raw[pos + 12:pos + 12 + length]
        if len(payload) != length or zlib.crc32(payload) != crc:
            break
        good.add(i)
        pos += 12 + length
    for line in promises:
        if line.startswith("ack "):
            i = int(line[4:])
            if raw is None:
                return f"the log is missing, record {i} was acknowledged"
            if i not in good:
                return f"record {i} was acknowledged and is not in the log"
    return None


def check():
    reason = reject(".", os.environ.get("BLACKOUT_ACKED", "").split("\n"))
    if reason:
        sys.exit(reason)
    return 0


def serve():
    for line in sys.stdin:
        request = json.loads(line)
        reason = reject(request["dir"], request["acked"])
        print("ok" if reason is None else "fail " + reason, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "serve":
        serve()
    else:
        sys.exit(check())
