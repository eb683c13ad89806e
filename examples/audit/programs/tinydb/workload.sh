#!/bin/sh
# update every document's k, close the database, then the promise.
PYTHONPATH="$AUDIT_LIB" exec python3 -c '
from tinydb import TinyDB
db = TinyDB("db.json")
db.update({"k": "v2"})
db.close()
print("saved", flush=True)'
