#!/usr/bin/env python3
"""A workload for measuring memory and time against the bytes written
(docs/PERFORMANCE.md): writes MIB mebibytes to big.dat in 1 MiB writes,
fsyncs it and its directory, and promises it ("saved"). Run in the
directory under test: `python3 bigwrite.py MIB`."""
import os
import sys

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
block = bytes(range(256)) * 4096  # 1 MiB, not zeros
fd = os.open("big.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(mib):
    os.write(fd, block)
os.fsync(fd)
os.close(fd)
dfd = os.open(".", os.O_RDONLY)  # the new name, durable too
os.fsync(dfd)
os.close(dfd)
print("saved", flush=True)
