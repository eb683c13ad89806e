#!/bin/sh
# Opens db.redb, sets k = "v2" in a write transaction and prints "saved"
# once commit returned.
exec "$AUDIT_LIB/target/release/redb-audit" write
