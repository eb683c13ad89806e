#!/usr/bin/env python3
"""A log of checksummed records, appended without a sync between them.

    csumlog.py write N
    csumlog.py check N

Each record is length, crc32, payload (1,000 bytes: records cross sector
boundaries). The writer appends N records, fsyncs once, prints "saved".
Recovery reads records in order: a bad record at the end is a torn tail
and is discarded; a bad record followed by a good one is corruption in the
middle, and recovery refuses to open the log ("checksum mismatch").
"""
import os
import struct
import sys
import zlib

SIZE = 1000


def record(i):
    payload = (f"record {i} ".encode() * 200)[:SIZE]
    return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def write(n):
    fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i in range(n):
        os.write(fd, record(i))
    os.fsync(fd)
    os.close(fd)
    print("saved", flush=True)


def check(n):
    raw = open("log", "rb").read() if os.path.exists("log") else b""
    good, pos, bad_at = 0, 0, None
    while pos + 8 <= len(raw):
        length, crc = struct.unpack("<II", raw[pos:pos + 8])
        payload = raw[pos + 8:pos + 8 + length]
        ok = length == SIZE and len(payload) == length and zlib.crc32(payload) == crc
        if ok and bad_at is not None:
            sys.exit(f"checksum mismatch at offset {bad_at} with good records after it")
        if ok:
            good += 1
        elif bad_at is None:
            bad_at = pos
        pos += 8 + SIZE
    if "saved" in os.environ.get("BLACKOUT_ACKED", "").split("\n") and good != n:
        sys.exit(f"saved was printed but the log holds {good} of {n} records")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(int(sys.argv[2]))
    else:
        sys.exit(check(int(sys.argv[2])))
