"""A write-heavy workload: 20,000 appends of 100 bytes, an fsync every 1,000,
and 40,000 unrelated system calls (getpid, stat) among them."""
import os
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
rec = b"x" * 99 + b"\n"
for i in range(n):
    os.write(fd, rec)
    os.getpid()
    os.stat(".")
    if i % 1000 == 999:
        os.fsync(fd)
print("done")
