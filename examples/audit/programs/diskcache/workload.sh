#!/bin/sh
# set k, close the cache, then the promise.
PYTHONPATH="$AUDIT_LIB" exec python3 -c '
from diskcache import Cache
c = Cache("cache")
c.set("k", "v2")
c.close()
print("saved", flush=True)'
