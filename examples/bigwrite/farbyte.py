#!/usr/bin/env python3
"""A workload for measuring memory against a file's size rather than the
bytes written (docs/PERFORMANCE.md): writes one byte at offset OFFSET
(default 1 GiB) of far.dat, fsyncs it and its directory, and promises it
("saved"). Run in the directory under test: `python3 farbyte.py [OFFSET]`."""
import os
import sys

off = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
fd = os.open("far.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b"x", off)
os.fsync(fd)
os.close(fd)
dfd = os.open(".", os.O_RDONLY)  # the new name, durable too
os.fsync(dfd)
os.close(dfd)
print("saved", flush=True)
