#!/bin/sh
PYTHONPATH="$AUDIT_LIB" exec python3 -c '
from atomicwrites import atomic_write
with atomic_write("config.json", overwrite=True) as f:
    f.write("{\"v\": 2}\n")
print("saved", flush=True)'
