#!/bin/sh
# set_key, then the promise. TMPDIR is unset: the temporary file goes
# where it goes for users who never set it (/tmp).
unset TMPDIR
PYTHONPATH="$AUDIT_LIB" exec python3 -c '
from dotenv import set_key
set_key(".env", "KEY", "v2")
print("saved", flush=True)'
