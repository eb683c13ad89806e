#!/usr/bin/env python3
"""A document saved in place: truncate it, write it anew, fsync, "saved".

    inplace.py [--blocks N] setup | save | check | refs DIR

setup:  doc.txt holds the old version, N blocks of 4 KiB (default 64, so
        256 KiB), durable.
save:   open doc.txt O_WRONLY|O_TRUNC, write the new version in N writes
        of 4 KiB, fsync it, print "saved".

The checker (the program's own reader) accepts the old version or the new
one, and only the new one once "saved" was printed; `refs DIR` writes
both versions to DIR/v1 and DIR/v2 for inplace-check.sh, the same checker
in shell. Any crash between the
truncate and the last write leaves a document that is neither: the update
is not atomic, and no sync can make it so (write a new file and rename it
over the old one instead).
"""
import os
import sys

BLOCK = 4096
BLOCKS = 64
if sys.argv[1:2] == ["--blocks"]:
    BLOCKS = int(sys.argv[2])
    del sys.argv[1:3]


def version(n):
    line = f"version {n}\n".encode()
    return (line * (BLOCK * BLOCKS // len(line) + 1))[: BLOCK * BLOCKS]


def setup():
    with open("doc.txt", "wb") as f:
        f.write(version(1))
        f.flush()
        os.fsync(f.fileno())
    dfd = os.open(".", os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


def save():
    new = version(2)
    fd = os.open("doc.txt", os.O_WRONLY | os.O_TRUNC)
    for i in range(BLOCKS):
        os.write(fd, new[i * BLOCK:(i + 1) * BLOCK])
    os.fsync(fd)
    os.close(fd)
    print("saved", flush=True)


def check():
    try:
        got = open("doc.txt", "rb").read()
    except FileNotFoundError:
        sys.exit("doc.txt is missing")
    saved = "saved" in os.environ.get("BLACKOUT_ACKED", "").split("\n")
    if got == version(2):
        return 0
    if saved:
        sys.exit(f"doc.txt is not the new version after saved ({len(got)} bytes)")
    if got == version(1):
        return 0
    sys.exit(f"doc.txt is neither the old nor the new version ({len(got)} bytes)")


def refs(d):
    for n in (1, 2):
        with open(os.path.join(d, f"v{n}"), "wb") as f:
            f.write(version(n))


if __name__ == "__main__":
    if sys.argv[1] == "refs":
        refs(sys.argv[2])
    else:
        {"setup": setup, "save": save, "check": check}[sys.argv[1]]()
