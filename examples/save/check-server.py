#!/usr/bin/env python3
"""The checker for save.sh as a checker server (`blackout run
--checker-server "python3 $PWD/examples/save/check-server.py"`): one
process per worker, one JSON request line per crash state in, `ok` or
`fail REASON` out. The same rules as check.sh: doc.txt must be the old
document or the new one, and the new one once "saved" was promised."""
import json
import os
import sys

OLD, NEW = b"version 1\n", b"version 2\n"


def check(request):
    """None if the state is acceptable, else why not."""
    path = os.path.join(request["dir"], "doc.txt")
    if not os.path.isfile(path):
        return "doc.txt is missing"
    with open(path, "rb") as f:
        doc = f.read()
    if not doc:
        return "doc.txt is empty"
    if doc == NEW:
        return None
    if doc != OLD:
        return f"doc.txt is neither version: {doc[:32]!r}"
    if "saved" in request["acked"]:
        return '"saved" was printed, but doc.txt is still version 1'
    return None


for line in sys.stdin:
    reason = check(json.loads(line))
    print("ok" if reason is None else "fail " + " / ".join(reason.splitlines()), flush=True)
