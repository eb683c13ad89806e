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
