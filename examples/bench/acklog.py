"""A log that grows at an even pace, for the engine's time per state by
decile (docs/PERFORMANCE.md): N appends (default 4,000) of 4,200 bytes,
an fsync and an acknowledgement after every third, so every crash point
has the same few ops pending however long the log has grown."""
import os
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(n):
    os.write(fd, (b"%06d" % i) * 700)
    if i % 3 == 2:
        os.fsync(fd)
        print("ack", i, flush=True)
