#!/usr/bin/env python3
"""A table of fixed-size checksummed records, each update written in place.

    records.py setup [--aligned] [--size S] [--slots N]
    records.py update [--aligned] [--size S] [--slots N] [--seed K] UPDATES
    records.py check [--aligned] [--size S] [--slots N]
    records.py serve [--aligned] [--size S] [--slots N]

The table holds N records of S bytes (default 100 of 40): slot, version,
payload, crc32 of the rest. `setup` writes every record at version 0 and
fsyncs (run unrecorded: durable). `update` rewrites UPDATES records chosen
by a seeded generator, each with `pwrite` at its slot's offset, then
`fdatasync`, then prints `ack SLOT VERSION`. By default records follow each
other, so some straddle a 512-byte sector boundary and an update in flight
can tear them; with `--aligned` a record never crosses one (each sector
holds as many whole records as fit, the rest is padding).

Recovery (`check`) reads every record and rejects the table if one has a
bad checksum (a torn record) or is older than the last version acknowledged
for its slot. `serve` is the same check as a checker server (one JSON
request line per state in, `ok` or `fail REASON` out).
"""
import json
import os
import random
import struct
import sys
import zlib

SECTOR = 512


def options(argv):
    opts = {"aligned": False, "size": 40, "slots": 100, "seed": 1}
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--aligned":
            opts["aligned"] = True
        elif a in ("--size", "--slots", "--seed"):
            opts[a[2:]] = int(argv[i + 1])
            i += 1
        else:
            rest.append(a)
        i += 1
    return opts, rest


def offset(opts, slot):
    size = opts["size"]
    if not opts["aligned"]:
        return slot * size
    per = SECTOR // size
    return (slot // per) * SECTOR + (slot % per) * size


def record(opts, slot, version):
    body = struct.pack("<II", slot, version)
    body += (f"slot {slot} v{version} ".encode() * 8)[: opts["size"] - 12]
    return body + struct.pack("<I", zlib.crc32(body))


def setup(opts):
    fd = os.open("table", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for slot in range(opts["slots"]):
        os.pwrite(fd, record(opts, slot, 0), offset(opts, slot))
    os.fsync(fd)
    os.close(fd)


def update(opts, n):
    rng = random.Random(opts["seed"])
    versions = [0] * opts["slots"]
    fd = os.open("table", os.O_WRONLY)
    for _ in range(n):
        slot = rng.randrange(opts["slots"])
        versions[slot] += 1
        os.pwrite(fd, record(opts, slot, versions[slot]), offset(opts, slot))
        os.fdatasync(fd)
        print(f"ack {slot} {versions[slot]}", flush=True)
    os.close(fd)


def reject(opts, directory, promises):
    """Why the table in `directory` breaks the promises, or None."""
    try:
        raw = open(os.path.join(directory, "table"), "rb").read()
    except FileNotFoundError:
        return "the table is missing"
    acked = {}
    for line in promises:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ack":
            acked[int(parts[1])] = int(parts[2])
    size = opts["size"]
    for slot in range(opts["slots"]):
        at = offset(opts, slot)
        rec = raw[at:at + size]
        if len(rec) != size or zlib.crc32(rec[:-4]) != struct.unpack("<I", rec[-4:])[0]:
            return f"record {slot} at offset {at} has a bad checksum"
        s, version = struct.unpack("<II", rec[:8])
        if s != slot:
            return f"record {slot} at offset {at} names slot {s}"
        if version < acked.get(slot, 0):
            return f"record {slot} is at version {version}, {acked[slot]} was acknowledged"
    return None


def check(opts):
    promises = os.environ.get("BLACKOUT_ACKED", "").split("\n")
    reason = reject(opts, ".", promises)
    if reason:
        sys.exit(reason)
    return 0


def serve(opts):
    for line in sys.stdin:
        request = json.loads(line)
        reason = reject(opts, request["dir"], request["acked"])
        print("ok" if reason is None else "fail " + reason, flush=True)


if __name__ == "__main__":
    opts, rest = options(sys.argv[1:])
    if rest[0] == "setup":
        setup(opts)
    elif rest[0] == "update":
        update(opts, int(rest[1]))
    elif rest[0] == "serve":
        serve(opts)
    else:
        sys.exit(check(opts))
