#!/usr/bin/env python3
"""A double-meta-page store: the classic commit of LMDB-like engines.

    metapage.py setup
    metapage.py [--bug meta-before-sync] put N
    metapage.py check

File `db`: two 4 KiB meta pages, then 4 KiB data pages. A meta is
magic, txid, page number, crc32 (20 bytes at the start of its page); a data
page is value length, crc32, value. Commit txid t: append the data page,
fdatasync, then overwrite the older meta page (t % 2) with 20 bytes through
an O_DSYNC descriptor, then print "ack t". Recovery takes the valid meta
(crc matches) with the highest txid and reads its page, which must be valid.

With --bug meta-before-sync the meta is written before the data page is
synced, so the meta can reach the disk while the page it points to does not.
"""
import os
import struct
import sys
import zlib

PAGE = 4096
MAGIC = 0x4D455441


def meta(txid, page):
    body = struct.pack("<III", MAGIC, txid, page)
    return body + struct.pack("<I", zlib.crc32(body)) + b"\0" * 4


def data_page(value):
    v = value.encode()
    head = struct.pack("<II", len(v), zlib.crc32(v))
    return (head + v).ljust(PAGE, b"\0")


def setup():
    with open("db", "wb") as f:
        f.write(meta(0, 2).ljust(PAGE, b"\0"))
        f.write(b"\0" * PAGE)
        f.write(data_page("v0"))
        f.flush()
        os.fsync(f.fileno())
    dfd = os.open(".", os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


def put(n, bug):
    fd = os.open("db", os.O_RDWR)
    mfd = os.open("db", os.O_WRONLY | os.O_DSYNC)
    for t in range(1, n + 1):
        page = os.fstat(fd).st_size // PAGE
        os.pwrite(fd, data_page(f"v{t}"), page * PAGE)
        if bug:
            os.pwrite(mfd, meta(t, page), (t % 2) * PAGE)
            os.fdatasync(fd)
        else:
            os.fdatasync(fd)
            os.pwrite(mfd, meta(t, page), (t % 2) * PAGE)
        print(f"ack {t}", flush=True)


def recover():
    raw = open("db", "rb").read()
    best = None
    for slot in (0, 1):
        m = raw[slot * PAGE:slot * PAGE + 20]
        if len(m) < 20:
            continue
        magic, txid, page, crc = struct.unpack("<IIII", m[:16])
        if magic == MAGIC and crc == zlib.crc32(m[:12]) and (best is None or txid > best[0]):
            best = (txid, page)
    if best is None:
        sys.exit("no valid meta page")
    txid, page = best
    p = raw[page * PAGE:(page + 1) * PAGE]
    if len(p) < 8:
        sys.exit(f"meta txid {txid} points past the end of db (page {page})")
    length, crc = struct.unpack("<II", p[:8])
    value = p[8:8 + length]
    if length > PAGE - 8 or zlib.crc32(value) != crc:
        sys.exit(f"meta txid {txid} points to a damaged page {page}")
    return txid, value.decode()


def check():
    txid, value = recover()
    if value != f"v{txid}":
        sys.exit(f"txid {txid} holds {value}")
    acked = [int(l.split()[1]) for l in os.environ.get("BLACKOUT_ACKED", "").split("\n") if l]
    if acked and txid < max(acked):
        sys.exit(f"ack {max(acked)} was printed but recovery finds txid {txid}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    bug = False
    if args[:2] == ["--bug", "meta-before-sync"]:
        bug, args = True, args[2:]
    if args[0] == "setup":
        setup()
    elif args[0] == "put":
        put(int(args[1]), bug)
    else:
        sys.exit(check())
