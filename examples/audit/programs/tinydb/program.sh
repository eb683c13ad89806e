# TinyDB's update: the default JSONStorage rewrites db.json in place
# (seek to 0, write, fsync, truncate), no temporary file.
NAME=tinydb
ECOSYSTEM=PyPI
VERSION=4.9.0
ACTION="db.update({'k': 'v2'}) on a db.json holding one document {\"k\": \"v1\"}, then db.close()"
install() { install_pip "$1" "tinydb==$VERSION"; }
SETUP='PYTHONPATH="$AUDIT_LIB" python3 -c "
from tinydb import TinyDB
db = TinyDB(\"db.json\")
db.insert({\"k\": \"v1\"})
db.close()"'
# What the program promises, in its own documentation at this release.
PROMISE=none
PROMISE_QUOTE='Why Not Use TinyDB? … You need advanced features like: … ACID guarantees. … To put it plainly: If you need advanced features or high performance, TinyDB is the wrong database for you'
PROMISE_LINK='https://github.com/msiemens/tinydb/blob/v4.9.0/docs/intro.rst#why-not-use-tinydb'
