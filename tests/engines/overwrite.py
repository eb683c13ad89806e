#!/usr/bin/env python3
"""Small overwrites and appends of a durable file `f`, then "saved".

    overwrite.py dsync | append | page
    overwrite.py check dsync | append | page

dsync:  f holds AAAAAAAA (durable); open it O_WRONLY|O_DSYNC, pwrite
        BBBBBBBB at 0 (inside one sector: storage writes it whole or not).
append: f holds AAAAAAAA; append BBBBBBBB and fsync (the file grows: its
        new size may reach the disk before its data, which reads as zeros).
page:   f holds 8192 bytes of 'a'; pwrite 4096 bytes of 'b' at 100 and
        fsync (eight sectors touched: each old or new after a crash).

The checker accepts the old content or the new one, and only the new one
once "saved" was printed; for page it also accepts any mix cut at 512-byte
boundaries (a sector is old or new), so it states what storage does.
"""
import os
import sys

OLD = {"dsync": b"A" * 8, "append": b"A" * 8, "page": b"a" * 8192}


def new(mode):
    if mode == "append":
        return b"A" * 8 + b"B" * 8
    if mode == "page":
        return b"a" * 100 + b"b" * 4096 + b"a" * (8192 - 4196)
    return b"B" * 8


def setup(mode):
    with open("f", "wb") as f:
        f.write(OLD[mode])
        f.flush()
        os.fsync(f.fileno())


def run(mode):
    if mode == "dsync":
        fd = os.open("f", os.O_WRONLY | os.O_DSYNC)
        os.pwrite(fd, b"B" * 8, 0)
    elif mode == "append":
        fd = os.open("f", os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"B" * 8)
        os.fsync(fd)
    else:
        fd = os.open("f", os.O_WRONLY)
        os.pwrite(fd, b"b" * 4096, 100)
        os.fsync(fd)
    os.close(fd)
    print("saved", flush=True)


def sector_mix(got, old, want):
    """Whether got is old and new sector by sector (512-byte sectors)."""
    if len(got) != len(old):
        return False
    for s in range(0, len(got), 512):
        part = got[s:s + 512]
        if part not in (old[s:s + 512], want[s:s + 512]):
            return False
    return True


def check(mode):
    got = open("f", "rb").read()
    saved = "saved" in os.environ.get("BLACKOUT_ACKED", "").split("\n")
    want = new(mode)
    if got == want:
        return 0
    if saved:
        sys.exit(f"f is not the new content after saved ({got[:16]!r}...)")
    if got == OLD[mode]:
        return 0
    if mode == "page" and sector_mix(got, OLD[mode], want):
        return 0
    sys.exit(f"f is neither old nor new ({len(got)} bytes: {got[:16]!r}...)")


if __name__ == "__main__":
    if sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
    else:
        run(sys.argv[1])
