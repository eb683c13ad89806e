#!/usr/bin/env python3
"""An append log in fixed blocks, as log-structured engines write theirs.

    blocklog.py [--bug NAME]... write N [--block B] [--size S] [--rotate R]
    blocklog.py [--bug NAME]... check [--block B]
    blocklog.py [--bug NAME]... serve [--block B]
    blocklog.py splits N [--block B] [--size S] [--rotate R]

`write` appends N records of S bytes (default 300) to a log, `data-1.log`,
then every R records (default 100) to a new one, `data-2.log` and on (each
created, its directory fsynced), as an engine starts a new log when it
flushes its memory table. A log is cut into blocks of B bytes (default
4096). A record that does not fit in
what is left of a block is split: its first fragment fills the block, the
rest starts the next one, and each fragment is its own `write` (a fragment
header: crc32, length, type FULL, FIRST, MIDDLE or LAST). Before each
record the program notes it in `INFO`, a human-readable log that recovery
never reads (never synced). After each record it `fdatasync`s the log and
prints `ack I`.

Recovery (`check`) reads the blocks in order, as an early reader of this
format does: a FIRST fragment that the log ends after, with no LAST, is
corruption ("partial record without end"), though the record was never
acknowledged; a bad fragment at the very end (cut short, or zeros to the
end) is a torn tail and is dropped. Every record acknowledged must be there. The writer's fix is one
write per record; the reader's, to drop a partial record at the end.
`serve` is the same check as a checker server; `splits` prints how many
of N records `write` splits across a block boundary.

A new log is listed in `MANIFEST` (a line `log N`, appended and
fdatasynced before the log is used), which `CURRENT` names (written once,
as `CURRENT.tmp`, fsynced and renamed into place, the directory fsynced);
recovery reads the first log and those the manifest lists. Planted bugs,
each switched on by `--bug NAME` (several may be):

- `ack-early`: every 50th record is acknowledged before its fdatasync;
- `no-log-dir-fsync`: a new log's directory entry is never fsynced;
- `manifest-unsynced`: the manifest's lines are never fsynced;
- `current-unsynced`: `CURRENT.tmp` is renamed into place before it is
  fsynced.
"""
import json
import os
import struct
import sys
import zlib

FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
HEADER = 7  # crc32 (4), length (2), type (1)


BUGS = ("ack-early", "no-log-dir-fsync", "manifest-unsynced", "current-unsynced")


def options(argv):
    opts = {"block": 4096, "size": 300, "rotate": 100, "bugs": set()}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--block", "--size", "--rotate"):
            opts[argv[i][2:]] = int(argv[i + 1])
            i += 2
        elif argv[i] == "--bug":
            if argv[i + 1] not in BUGS:
                sys.exit(f"no bug named {argv[i + 1]} (bugs: {', '.join(BUGS)})")
            opts["bugs"].add(argv[i + 1])
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return opts, rest


def fragment(kind, payload):
    body = bytes([kind]) + payload
    return struct.pack("<IH", zlib.crc32(body), len(payload)) + bytes([kind]) + payload


def fragments(opts, offset, payload):
    """The fragments of a record written at `offset`, each a separate write."""
    out = []
    block = opts["block"]
    first = True
    while True:
        left = block - offset % block
        if left < HEADER:
            out.append(b"\0" * left)  # trailer: too small for a header
            offset += left
            continue
        room = left - HEADER
        piece, payload = payload[:room], payload[room:]
        last = not payload
        kind = FULL if first and last else FIRST if first else LAST if last else MIDDLE
        frag = fragment(kind, piece)
        out.append(frag)
        offset += len(frag)
        first = False
        if last:
            return out


def fsync_dir():
    dirfd = os.open(".", os.O_RDONLY)
    os.fsync(dirfd)
    os.close(dirfd)


def new_log(opts, number, manifest):
    """A new log file, its directory entry made durable, listed in the
    manifest (the first one is read whether listed or not)."""
    fd = os.open(f"data-{number}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    if "no-log-dir-fsync" not in opts["bugs"]:
        fsync_dir()
    if number > 1:
        os.write(manifest, f"log {number}\n".encode())
        if "manifest-unsynced" not in opts["bugs"]:
            os.fdatasync(manifest)
    return fd


def write_current():
    """CURRENT, naming the manifest, written as a new file and renamed
    into place."""
    fd = os.open("CURRENT.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"MANIFEST\n")
    return fd


def write(opts, n):
    info = os.open("INFO", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    manifest = os.open("MANIFEST", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.fsync(manifest)
    fsync_dir()
    current = write_current()
    if "current-unsynced" not in opts["bugs"]:
        os.fsync(current)
    os.close(current)
    os.rename("CURRENT.tmp", "CURRENT")
    fsync_dir()
    fd = new_log(opts, 1, manifest)
    offset = 0
    for i in range(n):
        if i > 0 and opts["rotate"] and i % opts["rotate"] == 0:
            os.close(fd)
            fd = new_log(opts, i // opts["rotate"] + 1, manifest)
            offset = 0
        os.write(info, f"put record {i}\n".encode())
        payload = (f"record {i} ".encode() * opts["size"])[: opts["size"]]
        for frag in fragments(opts, offset, payload):
            os.write(fd, frag)
            offset += len(frag)
        early = "ack-early" in opts["bugs"] and i % 50 == 49
        if early:
            print(f"ack {i}", flush=True)
        os.fdatasync(fd)
        if not early:
            print(f"ack {i}", flush=True)
    os.close(fd)
    os.close(manifest)
    os.close(info)


def logs(directory):
    """The logs recovery reads: the first, and those the manifest that
    CURRENT names lists; or why it cannot tell."""
    names = ["data-1.log"]
    current = os.path.join(directory, "CURRENT")
    if not os.path.exists(current):
        return names, None
    with open(current, "rb") as f:
        manifest = f.read().decode(errors="replace").strip()
    if manifest != "MANIFEST":
        return None, f"CURRENT names no manifest ({manifest!r})"
    try:
        with open(os.path.join(directory, manifest), "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except FileNotFoundError:
        return None, "the manifest CURRENT names is missing"
    for line in lines:
        if line.startswith("log ") and line[4:].isdigit():
            names.append(f"data-{line[4:]}.log")
    return names, None


def reject(opts, directory, promises):
    """Why the logs in `directory` break the promises, or None."""
    names, why = logs(directory)
    if why:
        return why
    records = []
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as f:
                reason = read_log(opts, f.read(), records)
        except FileNotFoundError:
            reason = None if name == "data-1.log" else "listed in the manifest, missing"
        if reason:
            return f"{name}: {reason}"
    have = {r.split(b" ")[1].decode() for r in records}
    for line in promises:
        if line.startswith("ack ") and line[4:] not in have:
            return f"record {line[4:]} was acknowledged and is not in the logs"
    return None


def read_log(opts, raw, records):
    """Adds the records of one log to `records`; why it is corrupt, or None."""
    block = opts["block"]
    pending, pos = None, 0
    while pos < len(raw):
        left = block - pos % block
        if left < HEADER:
            pos += left
            continue
        head = raw[pos:pos + HEADER]
        if len(head) < HEADER:
            break  # a torn tail
        crc, length, kind = struct.unpack("<IHB", head)
        payload = raw[pos + HEADER:pos + HEADER + length]
        if len(payload) < length or zlib.crc32(bytes([kind]) + payload) != crc:
            if pos + HEADER + length >= len(raw) or not raw[pos:].strip(b"\0"):
                break  # a torn tail: cut short, or its size without its data
            return f"bad fragment at offset {pos}"
        pos += HEADER + length
        if kind == FULL:
            records.append(payload)
        elif kind == FIRST:
            pending = payload
        elif kind in (MIDDLE, LAST) and pending is not None:
            pending += payload
            if kind == LAST:
                records.append(pending)
                pending = None
        else:
            return f"fragment without a first at offset {pos}"
    if pending is not None:
        return "partial record without end"
    return None


def splits(opts, n):
    """How many of `n` records are written in more than one fragment."""
    count, offset = 0, 0
    for i in range(n):
        if i > 0 and opts["rotate"] and i % opts["rotate"] == 0:
            offset = 0
        payload = (f"record {i} ".encode() * opts["size"])[: opts["size"]]
        frags = [f for f in fragments(opts, offset, payload) if f.strip(b"\0")]
        count += len(frags) > 1
        offset += sum(len(f) for f in fragments(opts, offset, payload))
    return count


def main():
    opts, rest = options(sys.argv[1:])
    if rest[0] == "write":
        write(opts, int(rest[1]))
    elif rest[0] == "splits":
        print(splits(opts, int(rest[1])))
    elif rest[0] == "serve":
        for line in sys.stdin:
            request = json.loads(line)
            reason = reject(opts, request["dir"], request["acked"])
            print("ok" if reason is None else "fail " + reason, flush=True)
    else:
        reason = reject(opts, ".", os.environ.get("BLACKOUT_ACKED", "").split("\n"))
        if reason:
            sys.exit(reason)


if __name__ == "__main__":
    main()
