#!/bin/sh
# db.json opens with TinyDB and holds one document, its k v1 or v2, and
# v2 once "saved" was printed. TinyDB opens the file as it does on any
# start (mode r+, creating it if missing: a missing file reads as empty).
v=$(PYTHONPATH="$AUDIT_LIB" python3 -c '
from tinydb import TinyDB
db = TinyDB("db.json")
docs = db.all()
db.close()
print(docs[0].get("k") if len(docs) == 1 else "%d documents" % len(docs))' 2>&1) || {
    echo "db.json does not open: $(echo "$v" | tail -1)" >&2
    exit 1
}
case "$BLACKOUT_ACKED" in
*saved*) [ "$v" = v2 ] || { echo "k is $v after update and close returned" >&2; exit 1; } ;;
*) [ "$v" = v1 ] || [ "$v" = v2 ] || { echo "k is $v" >&2; exit 1; } ;;
esac
